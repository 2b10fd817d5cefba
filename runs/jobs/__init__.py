"""The job mechanism: what runs, PostgreSQL builds and fio baselines share.

A job is a row (a `Run`, a `PgBuild`, a `DeviceBaseline`) that waits in one line per host, holds
its hosts while a worker does it, gives a sign of life while it runs, can be cancelled, and ends
exactly once. `kinds` declares each kind of job; `dispatch` starts them in turn (and is the one
place that sends a job's task to a worker); `hooks` is what follows a job's end, registered by the
side that cares (a campaign's next round, a study after its builds), so the kinds know nothing of
campaigns; `sweeper` finds the jobs whose worker died and takes them over, each as its kind's
`Recovery` says. `observer` is what every job's worker-side observer shares (the log's tail,
the cancel, stopping what runs on a host), `progress` a step's time left; a job's live events
are runs.jobs.live.publish_job.
"""
