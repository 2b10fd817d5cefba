"""PostgreSQL builds from source: queue, execute, observe, recover, remove."""
