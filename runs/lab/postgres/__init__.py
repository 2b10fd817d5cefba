"""PostgreSQL on a host: the throw-away cluster, its settings, installs."""
