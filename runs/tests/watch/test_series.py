"""Series over time in the database (runs.watch.series, runs.watch.selectors): which runs are one
configuration, rounds and their spread, the step found at its round with the kernel change beside
it, a fixed number of queries, and the pages (list, series, the links from a run and a campaign)."""

from typing import Any

import pytest
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone

from runs.bench.specs import RunSpec
from runs.models import StoredChangePoint
from runs.tests.conftest import ClientFactory
from runs.tests.watch.history import ROUND_TPS, History, make_history
from runs.watch.selectors import (
    _by_series,
    _configurations,
    campaign_series,
    recurring_series,
    series_detail,
)
from runs.watch.series import series_key
from runs.watch.services.detect import watch_detect
from runs.watch.summaries import series_list

pytestmark = pytest.mark.django_db

SPEC = RunSpec(server_host_id=1, device_id=2, filesystem="ext4", pg_install_id=3)


@pytest.fixture
def history(users: Any) -> History:
    return make_history(users["otto"])


def test_repetitions_differ_in_their_seed_and_are_one_series() -> None:
    assert series_key(SPEC.replace(random_seed=1)) == series_key(SPEC.replace(random_seed=2)) == series_key(SPEC)
    assert len(series_key(SPEC)) == 16


@pytest.mark.parametrize(
    "change",
    [{"duration_s": 600}, {"clients": 8}, {"device_id": 4}, {"mount_options": "noatime"}, {"pg_install_id": 9},
     {"workload_params": {"skew": 1.3}}, {"client_host_ids": (5, 6)}, {"cache_state": "cold"}],
)  # fmt: skip
def test_a_configuration_that_measures_something_else_is_another_series(change: dict[str, Any]) -> None:
    assert series_key(SPEC.replace(**change)) != series_key(SPEC)


def test_a_parameter_typed_as_int_or_as_float_is_one_series() -> None:
    # The form types "2" as 2, a campaign's "2.0" or a declared default of 2.0 is a float: equal specs.
    as_int, as_float = SPEC.replace(workload_params={"skew": 2}), SPEC.replace(workload_params={"skew": 2.0})
    assert as_int == as_float and series_key(as_int) == series_key(as_float)
    assert series_key(as_int) != series_key(SPEC.replace(workload_params={"skew": 2.5}))


def test_client_hosts_in_another_order_are_another_series() -> None:
    assert series_key(SPEC.replace(client_host_ids=(5, 6))) != series_key(SPEC.replace(client_host_ids=(6, 5)))


def test_runs_read_as_values_are_keyed_as_their_specs(history: History) -> None:
    by_series = _by_series(_configurations(Q()))
    run = history.rounds[0][0]
    assert run.pk in {row["pk"] for row in by_series[series_key(RunSpec.from_run(run))]}
    assert sorted(len(rows) for rows in by_series.values()) == [1, 24]  # the 8-client run alone


def test_the_list_has_the_recurring_configuration_only(history: History) -> None:
    key = series_key(RunSpec.from_run(history.rounds[0][0]))
    [before] = series_list()
    watch_detect(key)  # what each round's end does

    [row] = series_list()

    assert (row.key, row.rounds, row.runs) == (key, 12, 6 * 3 + 6)
    assert row.last_at == history.rounds[-1][0].started_at
    assert row.title.startswith("lab1 · lab1:ssd · ext4") and "2 clients" in row.title and "5 s" in row.title
    assert row.last_tps == 1093.0  # the last round, a run alone
    assert before.change_points == 0 and row.change_points == 2  # stored ones (tps and latency), still found
    StoredChangePoint.objects.filter(metric="latency_avg").update(gone_at=timezone.now())
    assert series_list()[0].change_points == 1


def test_the_list_gives_a_campaign_round_s_mean(users: Any) -> None:
    history = make_history(users["otto"], rounds=ROUND_TPS[:11])  # the 11th round is a campaign's
    [row] = series_list()
    assert len(history.rounds[-1]) == 3  # tps - 10, tps and tps + 10
    assert row.rounds == 11 and row.last_tps == ROUND_TPS[10]  # their mean


def test_a_series_has_its_rounds_spread_step_and_kernel_change(history: History) -> None:
    key = series_key(RunSpec.from_run(history.rounds[0][0]))
    detail = series_detail(key)
    assert detail is not None and len(detail.rounds) == 12 and detail.runs == 24
    first, second = detail.rounds[0], detail.rounds[1]
    assert first.campaign_id == history.rounds[0][0].campaign_id and first.ref == f"c{first.campaign_id}"
    assert second.campaign_id is None and second.ref == f"r{history.rounds[1][0].pk}"
    tps = next(m for m in detail.metrics if m.metric.key == "steady_tps")
    assert [s.mean for s in tps.spreads if s] == ROUND_TPS
    assert tps.spreads[0] is not None and (tps.spreads[0].minimum, tps.spreads[0].maximum) == (990.0, 1010.0)
    assert tps.spreads[1] is not None and tps.spreads[1].sd is None  # one repetition
    assert [m.metric.key for m in detail.metrics] == ["steady_tps", "latency_avg"]  # the others recorded nothing
    [change] = tps.changes
    assert (change.round_before.number, change.round_after.number) == (6, 7)
    assert change.verdict == "faster" and change.size_text == "+9.8 % (95 % CI +8.8 to +10.8 %)"
    assert change.identity == f"{key}:steady_tps:c{history.rounds[6][0].campaign_id}"
    said = "lab1: kernel changed from 6.1.0-25-amd64 to 6.1.0-26-amd64 between round 6 and 7"
    assert [event.text for event in change.drift] == [said]
    assert [event.text for event in detail.drift] == [said]
    [latency] = next(m for m in detail.metrics if m.metric.key == "latency_avg").changes
    assert latency.verdict == "faster" and latency.point.change < 0  # lower latency is faster


def test_a_series_is_read_in_a_fixed_number_of_queries(
    history: History, users: Any, django_assert_max_num_queries: Any
) -> None:
    key = series_key(RunSpec.from_run(history.rounds[0][0]))
    # its runs, metrics, the last run with its client hosts (3), drift (2)
    with django_assert_max_num_queries(7):
        series_detail(key)
    with django_assert_max_num_queries(8):  # counts, last runs, their rounds, metrics, points, titles (3)
        series_list()
    make_history(users["vera"], host_name="lab3")
    with django_assert_max_num_queries(8):
        assert len(series_list()) == 2
    make_history(users["ada"], host_name="lab2")  # twice the runs, another series
    with django_assert_max_num_queries(7):
        series_detail(key)


def test_a_run_and_a_campaign_know_their_series(history: History) -> None:
    run = history.rounds[0][0]
    key = series_key(RunSpec.from_run(run))
    assert recurring_series([run, history.once]) == {run.pk: (key, 12)}  # the 8-client one ran once
    assert run.campaign_id is not None and campaign_series(run.campaign_id) == {0: (key, 12)}


def test_the_pages(history: History, client_for: ClientFactory) -> None:
    run = history.rounds[0][0]
    key = series_key(RunSpec.from_run(run))
    vera = client_for("vera")
    listed = vera.get(reverse("series"))
    assert listed.status_code == 200 and reverse("series-detail", args=[key]) in listed.content.decode()
    page = vera.get(reverse("series-detail", args=[key]))
    text = page.content.decode()
    assert page.status_code == 200 and "between round 6 and 7" in text and 'id="change-steady_tps-7"' in text
    assert reverse("series-detail", args=[key]) in vera.get(reverse("run-detail", args=[run.pk])).content.decode()
    campaign_page = vera.get(reverse("campaign-detail", args=[run.campaign_id])).content.decode()
    assert "this configuration over time" in campaign_page
    once = vera.get(reverse("run-detail", args=[history.once.pk])).content.decode()
    assert "This configuration over time" not in once
    assert client_for(None).get(reverse("series")).status_code in (302, 403)
    assert client_for("nora").get(reverse("series-detail", args=[key])).status_code == 403


def test_a_bad_or_unknown_key_is_refused_saying_why(history: History, client_for: ClientFactory) -> None:
    vera = client_for("vera")
    bad = vera.get(reverse("series-detail", args=["lab1-ssd"]))
    assert bad.status_code == 400
    assert "a series key is 16 hexadecimal digits (0-9, a-f), not &#x27;lab1-ssd&#x27;" in bad.content.decode()
    unknown = vera.get(reverse("series-detail", args=["0123456789abcdef"]))
    assert unknown.status_code == 404 and "no done run belongs to series 0123456789abcdef" in unknown.content.decode()


@pytest.mark.parametrize(
    ("rounds", "new_kernel_from", "said"),
    [
        # between repetitions 1 and 2 of round 7 (a campaign of three): read "round 7 and 8" by start times
        (ROUND_TPS, (7, 1), "during round 7"),
        # inside the last round (11, a campaign): read "rounds 11 and 11"
        (ROUND_TPS[:11], (11, 2), "during round 11"),
        # at a round's first run: between that round and the one before, as it was
        (ROUND_TPS, (7, 0), "between round 6 and 7"),
    ],
    ids=["inside-a-round", "inside-the-last-round", "at-a-round"],
)
def test_a_drift_event_is_placed_by_the_runs_it_was_seen_between(
    users: Any, rounds: list[float], new_kernel_from: tuple[int, int], said: str
) -> None:
    # Found in the review of issue 34: rounds were matched to a change by their start times.
    history = make_history(users["otto"], rounds=rounds, new_kernel_from=new_kernel_from)
    detail = series_detail(series_key(RunSpec.from_run(history.rounds[0][0])))
    assert detail is not None
    [event] = detail.drift
    assert event.text == f"lab1: kernel changed from 6.1.0-25-amd64 to 6.1.0-26-amd64 {said}"
    number = new_kernel_from[0]
    assert (event.round_before, event.round_after) == ((number, number) if new_kernel_from[1] else (6, 7))
