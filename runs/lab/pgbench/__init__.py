"""pgbench: its commands, scripts, following its output, latency and totals."""
