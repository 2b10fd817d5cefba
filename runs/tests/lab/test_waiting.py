"""The lab layer's one polling loop (runs/lab/transport/waiting.py), on a clock of its own."""

import pytest

from runs.lab.transport import waiting


class Clock:
    """time.monotonic and time.sleep for waiting.py: sleeping moves the clock, nothing waits."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr(waiting, "time", clock)
    return clock


def test_an_exit_status_of_0_is_an_answer_not_a_reason_to_wait(clock: Clock) -> None:
    assert waiting.wait_until(lambda: 0, timeout_s=10, interval_s=0.5) == 0
    assert clock.slept == []


def test_it_looks_every_interval_until_the_answer_comes(clock: Clock) -> None:
    answers = iter([None, None, False, "1234"])

    assert waiting.wait_until(lambda: next(answers), timeout_s=10, interval_s=0.5) == "1234"
    assert clock.slept == [0.5, 0.5, 0.5]


def test_it_looks_once_more_at_the_deadline_and_then_gives_the_last_answer(clock: Clock) -> None:
    looked_at: list[float] = []

    def never() -> bool:
        looked_at.append(clock.now - 1000.0)
        return False

    assert waiting.wait_until(never, timeout_s=1.2, interval_s=0.5) is False
    assert looked_at == pytest.approx([0.0, 0.5, 1.0, 1.2])  # the last sleep is cut to the deadline
