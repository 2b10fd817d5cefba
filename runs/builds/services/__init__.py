"""Every write of a build's life."""
