"""benchlab's settings with runs.tests.drift_urls: for the browser test's web server."""

from benchlab.settings import *  # noqa: F403

ROOT_URLCONF = "runs.tests.drift_urls"
