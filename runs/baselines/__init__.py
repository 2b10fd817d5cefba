"""Raw device baselines (fio): queue, execute, observe, recover; and their reads."""
