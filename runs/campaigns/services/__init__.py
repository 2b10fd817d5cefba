"""Every write of a campaign: create, retry, cancel, adaptive rounds, studies waiting for builds,
the hooks on jobs' ends."""
