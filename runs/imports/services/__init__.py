"""Writes of imported runs."""
