"""Reads of a campaign for its page and the API."""
