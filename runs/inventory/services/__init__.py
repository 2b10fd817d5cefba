"""Writes about the inventory: hosts reached and probed, installs registered."""
