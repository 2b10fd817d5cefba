"""One sample of what a host is doing (load average, every process's CPU time), in one round
trip; runs/lab/parse/activity.py says what it means and compares two of them.

The run's own processes are named so the parser can leave them out: the run user's (its
cluster, its pgbench), the collectors' wrappers whose PIDs are in the run directory (and
their children: iostat, vmstat), this snippet's own shell (and its cat and find), and the SSH
session serving benchlab's connection (a probe's reads would otherwise show it busy).
"""

from runs.lab.host.run_user import RUN_USER
from runs.lab.parse.activity import ActivitySample, activity_sample_from
from runs.lab.transport.interface import Transport

# $1: the run user; $2: the run directory, whose *.pid files are the collectors' wrappers.
_SAMPLE = (
    'echo "==uptime"; cat /proc/uptime; echo "==loadavg"; cat /proc/loadavg; '
    'echo "==clock"; getconf CLK_TCK; echo "==cpus"; getconf _NPROCESSORS_ONLN; '
    'echo "==run_user"; id -u -- "$1" 2>/dev/null; '
    'echo "==own"; echo $$; cat "$2"/*.pid 2>/dev/null; echo; '
    # The SSH session serving this connection (and so every command benchlab runs over it): the
    # nearest sshd above this shell (transport.run puts a `timeout` between them). None locally.
    "p=$PPID; for i in 1 2 3; do "
    'case "$(cat /proc/$p/comm 2>/dev/null)" in sshd*) echo $p; break;; esac; '
    "p=$(cut -d')' -f2 /proc/$p/stat 2>/dev/null | cut -d' ' -f3); [ -n \"$p\" ] || break; done; "
    'echo "==owners"; find /proc -mindepth 1 -maxdepth 1 -name "[0-9]*" -printf "%f %U\\n" 2>/dev/null; '
    'echo "==stat"; cat /proc/[0-9]*/stat 2>/dev/null; true'
)


def activity_sample(transport: Transport, run_dir: str) -> ActivitySample:
    return activity_sample_from(transport.run(["sh", "-c", _SAMPLE, "sh", RUN_USER, run_dir], check=False).stdout)
