"""How long a job's step still takes: what a build's make and a baseline's fio jobs show."""


def eta_seconds(elapsed_s: float, percent: float | None) -> int | None:
    """How long the step still takes at the pace it has had so far; None until it has moved."""
    if percent is None or percent <= 0.5 or elapsed_s <= 0:
        return None
    return max(0, round(elapsed_s * (100.0 - percent) / percent))
