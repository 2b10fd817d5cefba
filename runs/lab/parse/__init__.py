"""Pure parsers of what the tools print: pgbench, sysstat, fio."""
