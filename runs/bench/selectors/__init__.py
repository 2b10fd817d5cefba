"""Reads of runs for pages and the API: the run page, the list, filters, estimates."""
