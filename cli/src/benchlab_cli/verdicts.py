"""A finished campaign read for a CI job: its configurations' verdicts against the baseline
(the API's `statistics`, the page's own tests) and its runs that did not end done."""

from dataclasses import dataclass
from typing import Any

FINAL_STATES = ("done", "failed", "cancelled")


@dataclass(frozen=True)
class Verdict:
    metric: str
    configuration: str  # its label
    verdict: str  # "faster", "slower", "within noise", "too few runs", ...
    text: str  # "slower: -12.0 % ± 3.1 % (p = 0.002)"
    confounded: str | None  # what the verdict mixes in besides the configuration, or None


def verdicts(campaign: dict[str, Any], metrics: list[str] | None = None) -> list[Verdict]:
    """Each configuration's verdict on each metric (those named, or all), the baseline left out."""
    labels = {c["index"]: c["label"] for c in campaign.get("configurations", [])}
    found = []
    for key, table in campaign.get("statistics", {}).items():
        if metrics and key not in metrics:
            continue
        for row in table["rows"]:
            comparison = row.get("comparison")
            if comparison is None:
                continue  # the baseline itself
            label = labels.get(row["configuration"], f"configuration {row['configuration']}")
            found.append(Verdict(key, label, comparison["verdict"], comparison["text"], row.get("confounded")))
    return found


def unknown_metrics(campaign: dict[str, Any], metrics: list[str]) -> list[str]:
    return [m for m in metrics if m not in campaign.get("statistics", {})]


def slower(campaign: dict[str, Any], metrics: list[str] | None = None) -> list[Verdict]:
    return [v for v in verdicts(campaign, metrics) if v.verdict == "slower"]


def not_done_runs(campaign: dict[str, Any]) -> list[tuple[int, str, str]]:
    """(run id, state, configuration label) of each ended run that is not done."""
    return [
        (run["id"], run["state"], configuration["label"])
        for configuration in campaign.get("configurations", [])
        for run in configuration["runs"]
        if run["state"] in FINAL_STATES and run["state"] != "done"
    ]


def has_ended(campaign: dict[str, Any]) -> bool:
    """Every run ended, and no adaptive configuration about to queue another round (an adaptive
    campaign adds one once its last round is over, unless a run of it was cancelled)."""
    progress = campaign["progress"]
    if progress["total"] == 0 or progress["finished"] < progress["total"]:
        return False
    if progress["by_state"].get("cancelled"):
        return True
    return not any((c.get("adaptive") or {}).get("repeating") for c in campaign.get("configurations", []))


def current_runs(campaign: dict[str, Any]) -> list[tuple[int, str, str]]:
    """(run id, state, configuration label) of the runs under way: started, not ended."""
    return [
        (run["id"], run["state"], configuration["label"])
        for configuration in campaign.get("configurations", [])
        for run in configuration["runs"]
        if run["state"] not in (*FINAL_STATES, "queued")
    ]
