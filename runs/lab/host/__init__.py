"""A host as a whole: what it is (probe), the run user, benchlab's own services on it."""
