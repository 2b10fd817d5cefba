"""Pages of API lists: ?limit= and ?offset= are checked like every other parameter.

DRF's LimitOffsetPagination quietly ignores a limit it cannot read and passes any offset to
PostgreSQL, which refuses one past bigint (a 500). Here a bad value is a 400 that says why.
"""

from functools import partial

from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request

from runs.api.parameters import query_parameter
from runs.common.params import MAX_ID, parse_whole_number

MAX_PAGE = 1000


class CheckedLimitOffsetPagination(LimitOffsetPagination):
    default_limit = 100
    max_limit = MAX_PAGE

    def get_limit(self, request: Request) -> int:
        limit = query_parameter(request, self.limit_query_param, partial(parse_whole_number, low=1, high=MAX_PAGE))
        return self.default_limit if limit is None else limit

    def get_offset(self, request: Request) -> int:
        offset = query_parameter(request, self.offset_query_param, partial(parse_whole_number, low=0, high=MAX_ID))
        return offset or 0
