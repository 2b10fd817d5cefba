"""Comparing runs: the query, statistics, what differs, confounds, drift, exports and share links."""
