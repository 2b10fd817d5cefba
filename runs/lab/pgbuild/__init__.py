"""Building PostgreSQL from source on a host: sources, options, compile, place, verify."""
