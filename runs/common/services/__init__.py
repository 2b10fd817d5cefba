"""benchlab-wide writes: the audit trail, the health answer."""
