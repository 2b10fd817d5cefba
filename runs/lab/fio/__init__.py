"""fio baselines of a raw device: the plan and the run."""
