"""The run: its specification and checks (pure), its services (queue, execute, observe, store,
reattach, sweep) and selectors (pages' reads)."""
