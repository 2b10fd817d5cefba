"""How dates and times read everywhere, pages and the admin alike: ISO days, 24-hour clocks and the
time zone, so "2025-03-10 14:05 UTC" means one moment to a whole lab, wherever each reader sits.

Django's own English formats ("March 10, 2025, 2:05 p.m.") would win over DATE_FORMAT & co. in
settings (localisation is always on): a format module is the one place that overrides them. The
input formats stay Django's (they accept YYYY-MM-DD and HH:MM[:SS] first).
"""

DATE_FORMAT = "Y-m-d"
TIME_FORMAT = "H:i:s"
DATETIME_FORMAT = "Y-m-d H:i:s T"
SHORT_DATE_FORMAT = "Y-m-d"
SHORT_DATETIME_FORMAT = "Y-m-d H:i T"
YEAR_MONTH_FORMAT = "Y-m"
MONTH_DAY_FORMAT = "m-d"
