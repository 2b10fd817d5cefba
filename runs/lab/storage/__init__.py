"""The storage under test: safety checks, mkfs and mount, kept setups, device faults."""
