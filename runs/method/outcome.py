"""What a method check says: passed, warning or not applicable, with a one-line reason."""

from dataclasses import dataclass
from enum import StrEnum


class Status(StrEnum):
    PASSED = "passed"
    WARNING = "warning"
    NOT_APPLICABLE = "not applicable"
    NOT_RECORDED = "not recorded"  # a run from before benchlab recorded what the check reads


@dataclass(frozen=True)
class Check:
    key: str  # stable: Run.method_overrides and the help page's anchors use it
    title: str
    status: Status
    reason: str  # one line, in the lab's words, with the figures that decided it
    advice: str = ""  # what to change, for a warning
    accepted: str = ""  # a user's reason for accepting this warning (Run.method_overrides)
    accepted_by: str = ""

    @property
    def warns(self) -> bool:
        """A warning nobody accepted."""
        return self.status == Status.WARNING and not self.accepted
