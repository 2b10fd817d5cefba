"""Writes of comparisons: share links."""
