"""What can go wrong, each with the exit code a CI job reads (listed in `benchlab --help`)."""

from enum import IntEnum


class Exit(IntEnum):
    OK = 0
    VERDICT = 1  # asked for (--fail-on-slower, --fail-on-failed) and found; or a waited-for run not done
    USAGE = 2  # the command line, a file or the configuration
    API = 3  # benchlab answered with a refusal: 400 (its field errors), 401/403, 404, 429, 5xx
    CONNECTION = 4  # benchlab did not answer at all
    TIMEOUT = 5  # --wait gave up (--timeout) before everything had ended


EXIT_CODES_HELP = """exit codes:
  0  done
  1  a verdict you asked to fail on: a configuration "slower" than the baseline (--fail-on-slower),
     a failed or cancelled run (--fail-on-failed); `runs queue --wait`: the run did not end done
  2  usage: a bad command line, spec/plan file or configuration (nothing was sent)
  3  the API refused: its message printed (400: each field's error; 401/403: the token or its role)
  4  no connection: benchlab's URL did not answer
  5  --wait gave up after --timeout seconds (the runs go on)"""


class CliError(Exception):
    """A message for stderr and the exit code that goes with it."""

    def __init__(self, message: str, code: Exit) -> None:
        super().__init__(message)
        self.code = code


class UsageError(CliError):
    def __init__(self, message: str) -> None:
        super().__init__(message, Exit.USAGE)


class ApiError(CliError):
    """benchlab answered, refusing: `status` is the HTTP status, `body` its parsed JSON (or text)."""

    def __init__(self, message: str, status: int, body: object = None) -> None:
        super().__init__(message, Exit.API)
        self.status = status
        self.body = body


class ConnectionFailed(CliError):
    def __init__(self, message: str) -> None:
        super().__init__(message, Exit.CONNECTION)
