"""Hosts, devices and PostgreSQL installs: connecting to hosts, probing them, whether they answer."""
