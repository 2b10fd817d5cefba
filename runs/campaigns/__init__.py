"""Campaigns: the matrix of configurations, presets and plans (pure), their services (create,
adaptive rounds, studies after builds) and selectors (results)."""
