"""The pages' forms, one module per domain."""
