"""A benchmark's own database: created empty and migrated like the test suite's, dropped at the
end, never the test suite's (test_<name>) nor benchlab's own."""

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.test.utils import get_runner


def in_throwaway_database(suffix: str, measure: Callable[[], int]) -> int:
    """`measure()` against <name>_<suffix>, which exists only while it runs; its exit status."""
    database: dict[str, Any] = settings.DATABASES["default"]
    database.setdefault("TEST", {})["NAME"] = f"{database['NAME']}_{suffix}"
    runner = get_runner(settings)(verbosity=0, interactive=False)
    old_config = runner.setup_databases()
    try:
        return measure()
    finally:
        runner.teardown_databases(old_config)
