"""The `benchlab` command: benchlab from a shell, through its JSON API only."""
