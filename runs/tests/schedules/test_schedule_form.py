"""The schedule form without a browser: the crontab fields stay in the page (schedule_form.js
hides them for a preset; a browser without JavaScript still has them) and a preset ignores them.
And a schedule's template campaign: nothing in benchlab deletes a campaign today."""

import pytest
from django.contrib.auth.models import User
from django.db.models import ProtectedError

from runs.forms.schedules import CUSTOM
from runs.models import CampaignSchedule
from runs.schedules.crontab import CRON_PRESETS, crontab_of_row
from runs.tests.conftest import ClientFactory
from runs.tests.schedules.test_rounds import nightly, template
from runs.tests.schedules.test_schedule_pages import FORM

pytestmark = pytest.mark.django_db


def test_the_crontab_fields_are_in_the_page_for_a_browser_without_javascript(
    users: dict[str, User], client_for: ClientFactory
) -> None:
    """schedule_form.js hides them for a preset; the page itself never does, so a browser without
    JavaScript still offers "crontab" with its fields."""
    campaign = template(users["otto"])
    page = client_for("otto").get(f"/campaigns/{campaign.pk}/").content.decode()
    assert f'<fieldset class="crontab-fields" data-shown-for="{CUSTOM}">' in page and 'id="id_hour"' in page
    assert "js/schedule_form.js" in page


def test_a_preset_sent_without_javascript_ignores_the_crontab_fields_beside_it(
    users: dict[str, User], client_for: ClientFactory
) -> None:
    campaign = template(users["otto"])
    response = client_for("otto").post(f"/campaigns/{campaign.pk}/schedule", FORM | {"times": "mondays", "hour": "99"})
    assert response.status_code == 302
    schedule = CampaignSchedule.objects.select_related("periodic_task__crontab").get()
    assert crontab_of_row(schedule.periodic_task.crontab) == CRON_PRESETS["mondays"].crontab


def test_a_template_with_a_schedule_cannot_be_deleted_and_there_is_no_way_to_try(
    users: dict[str, User], client_for: ClientFactory
) -> None:
    """Today no page, API call or admin page deletes a campaign: the API's campaigns take no DELETE
    and the admin does not list them. Only code could, and PROTECT stops it naming the schedule."""
    schedule = nightly(users["otto"])
    campaign = schedule.campaign
    assert client_for("ada").delete(f"/api/campaigns/{campaign.pk}/").status_code == 405
    assert client_for("ada").get("/admin/runs/campaign/").status_code == 404
    with pytest.raises(ProtectedError, match="nightly ram vs hdd"):
        campaign.delete()
