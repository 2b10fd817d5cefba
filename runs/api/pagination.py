"""Pages of API lists: ?limit= and ?offset= are checked like every other parameter.

DRF's LimitOffsetPagination quietly ignores a limit it cannot read and passes any offset to
PostgreSQL, which refuses one past bigint (a 500). Here a bad value is a 400 that says why.
"""

from rest_framework.exceptions import ValidationError
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request

from runs.params import MAX_ID, BadParameter, parse_whole_number

MAX_PAGE = 1000


class CheckedLimitOffsetPagination(LimitOffsetPagination):
    default_limit = 100
    max_limit = MAX_PAGE

    def get_limit(self, request: Request) -> int:
        return self._number(request, self.limit_query_param, 1, MAX_PAGE, self.default_limit)

    def get_offset(self, request: Request) -> int:
        return self._number(request, self.offset_query_param, 0, MAX_ID, 0)

    @staticmethod
    def _number(request: Request, name: str, low: int, high: int, default: int) -> int:
        raw = request.query_params.get(name)
        if raw is None or raw == "":
            return default
        try:
            return parse_whole_number(raw, name, low, high)
        except BadParameter as exc:
            raise ValidationError({name: [str(exc)]}) from None
