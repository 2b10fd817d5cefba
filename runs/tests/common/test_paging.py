"""A page past a list's end is its last page with a notice (runs.common.paging), on every paged
page but the run list (runs.forms.run_filters, which takes the helper in its own change)."""

import pytest
from django.core.paginator import Paginator
from django.urls import reverse

from runs.common.paging import asked_page, page_or_last
from runs.common.params import BadParameter
from runs.compare.services.shares import share_create
from runs.models import ShareKind
from runs.tests.conftest import ClientFactory
from runs.tests.factories import make_device, make_host, make_pg_install, make_run
from runs.tests.job_factories import make_baseline, make_build
from runs.views import baselines, builds, shares


def test_it_answers_a_page_past_the_end_with_the_last_and_says_so() -> None:
    page, notice = page_or_last(Paginator(list(range(5)), 2), 3)
    assert list(page.object_list) == [4] and notice is None
    page, notice = page_or_last(Paginator(list(range(5)), 2), 9, "change points")
    assert page.number == 3 and list(page.object_list) == [4]
    assert notice == "There is no page 9: these change points fill pages 1 to 3; this is the last."
    page, notice = page_or_last(Paginator(list(range(2)), 2), 4, "builds")
    assert page.number == 1 and notice == "There is no page 4: these builds fit on page 1, shown here."
    page, notice = page_or_last(Paginator([], 2), 2, "tokens")
    assert page.number == 1 and not page.object_list
    assert notice == "There is no page 2: there are no tokens to show; this is page 1, empty."


@pytest.mark.parametrize("raw", ["x", "0", "-1", "1.5", "٣", "10000001"])
def test_a_page_that_is_not_a_whole_number_is_refused_naming_what_is_allowed(raw: str) -> None:
    with pytest.raises(BadParameter, match="page must be a whole number from 1 to 1000000, not"):
        asked_page(raw)


def test_no_page_asked_is_the_first() -> None:
    assert asked_page(None) == 1 and asked_page("") == 1 and asked_page("7") == 7


def test_every_paged_page_shows_its_last_page_past_the_end(
    client_for: ClientFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    for module, name in ((builds, "BUILDS_PER_PAGE"), (baselines, "BASELINES_PER_PAGE"), (shares, "SHARES_PER_PAGE")):
        monkeypatch.setattr(module, name, 2)
    ada = client_for.users["ada"]
    device = make_device(make_host())
    run = make_run(device.host, device, make_pg_install(device.host))
    for n in range(3):
        make_build(device.host, ada, key=f"{n:012x}")
        make_baseline(device, ada)
        share_create(kind=ShareKind.RUN, target=run, by=ada)
    client = client_for("ada")
    for url, what in (("builds", "builds"), ("baselines", "baselines"), ("shares", "share links")):
        last = client.get(reverse(url), {"page": "2"}).content.decode()
        past = client.get(reverse(url), {"page": "9"})
        junk = client.get(reverse(url), {"page": "two"})
        said = f"There is no page 9: these {what} fill pages 1 to 2; this is the last."
        assert past.status_code == 200 and f'id="past-the-end" role="status">{said}</p>' in past.content.decode(), url
        assert 'id="past-the-end"' not in last
        assert junk.status_code == 400 and "page must be a whole number from 1 to 1000000, not" in junk.content.decode()


def test_the_tokens_page_shows_an_empty_first_page_past_the_end(client_for: ClientFactory) -> None:
    past = client_for("vera").get(reverse("tokens"), {"page": "3"})
    said = "There is no page 3: there are no tokens to show; this is page 1, empty."
    assert past.status_code == 200 and said in past.content.decode() and 'id="no-tokens"' in past.content.decode()
    assert client_for("vera").get(reverse("tokens"), {"page": "0"}).status_code == 400
