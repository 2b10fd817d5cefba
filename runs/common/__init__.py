"""What every domain uses: parameters, roles, formatting, live events, audit, database retries."""
