"""A run specification's library workload, checked: the script it names and its parameters'
values against their declared ranges (spec_checks.spec_errors asks; the rules are
runs/lab/pgbench/library/). Pure: it reads the scripts it is given."""

from collections.abc import Mapping

from runs.bench.specs import RunSpec
from runs.lab.errors import InvalidOption
from runs.models import Workload, WorkloadScript


def library_script_text(
    spec: RunSpec, scripts: Mapping[int, WorkloadScript]
) -> tuple[str | None, tuple[str, str] | None]:
    """The script as it would run, or None; and the problem (form field, message), or None."""
    if spec.workload != Workload.LIBRARY:
        if spec.library_script_id is not None or spec.workload_params:
            return None, ("workload", "A library script and its parameters go with the workload from the library.")
        return None, None
    script = scripts.get(spec.library_script_id) if spec.library_script_id is not None else None
    if script is None:
        names = ", ".join(sorted({str(s.name) for s in scripts.values()})) or "none yet"
        return None, ("library_script", f"A library workload needs its script: choose one of {names}.")
    try:
        return script.rendered(dict(spec.workload_params)), None
    except InvalidOption as exc:
        return None, ("workload_params", f"{script}: {exc}.")
