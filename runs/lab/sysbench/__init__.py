"""sysbench, benchlab's second driver: its options, command lines and output (sysbench 1.0's
oltp_* Lua tests against PostgreSQL through its pgsql driver)."""
