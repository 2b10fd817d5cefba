"""Logging filters named in settings.LOGGING."""

import logging


class NoTracebackBelow500(logging.Filter):
    """Django logs a refused request (a 403 from PermissionDenied, a 400) with the exception's
    traceback. Those are answers, not faults: keep the one-line warning, drop the traceback,
    so the log's tracebacks are benchlab's own failures."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "status_code", 500) < 500:
            record.exc_info = None
            record.exc_text = None
        return True
