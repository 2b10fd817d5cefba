"""Every write of a run's life: queue, execute, observe, store results, reuse, reattach, recover."""
