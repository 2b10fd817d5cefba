"""A benchmark run on the lab, stage by stage: storage, cluster, load, measure, collect, clean up,
resume."""
