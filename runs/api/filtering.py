"""Every API list refuses a query parameter it does not read, with a 400 naming what it takes,
and filters runs with the run list page's own filter set (runs.bench.filters.RunFilter): a
script that asked for one campaign's runs and got every run would take them for the answer.

A viewset says what its list reads: its `filterset_class`'s parameters, the `list_parameters`
it reads itself, and the paginator's limit and offset.
"""

from typing import Any

from django.db.models import QuerySet
from django_filters.rest_framework import DjangoFilterBackend  # type: ignore[import-untyped]
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request

from runs.common.filters import StrictFilterSet, unknown_parameters


class CheckedListParameters:
    """Refuses, before a list is read, a parameter none of its readers reads."""

    list_parameters: tuple[str, ...] = ()  # read by the viewset itself
    checked_actions: tuple[str, ...] = ("list",)
    filterset_class: type[StrictFilterSet] | None = None

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)  # type: ignore[misc]  # after authentication and permissions
        if getattr(self, "action", None) in self.checked_actions:
            refusal = unknown_parameters(request.query_params, self.allowed_parameters(), request.path)
            if refusal:
                raise ValidationError({"detail": refusal})

    def allowed_parameters(self) -> tuple[str, ...]:
        own = self.filterset_class.parameters() if self.filterset_class else ()
        return (*own, *self.list_parameters, *self.paging_parameters())

    def paging_parameters(self) -> tuple[str, ...]:
        paginator = getattr(self, "paginator", None)
        if paginator is None:
            return ()
        return tuple(
            getattr(paginator, name) for name in ("limit_query_param", "offset_query_param") if hasattr(paginator, name)
        )


class StrictFilterBackend(DjangoFilterBackend):
    """django-filter's backend, with the filter set told what else the list reads (paging) and
    where it is, so its refusals name the endpoint."""

    def get_filterset(self, request: Request, queryset: QuerySet[Any], view: Any) -> Any:
        filterset = super().get_filterset(request, queryset, view)
        if isinstance(filterset, StrictFilterSet) and isinstance(view, CheckedListParameters):
            own = set(filterset.parameters())
            filterset.also_allowed = tuple(name for name in view.allowed_parameters() if name not in own)
            filterset.where = request.path
        return filterset

    def filter_queryset(self, request: Request, queryset: QuerySet[Any], view: Any) -> QuerySet[Any]:
        # A detail or an action reads no list filters (and may read parameters of its own).
        if getattr(view, "action", None) not in getattr(view, "checked_actions", ("list",)):
            return queryset
        return super().filter_queryset(request, queryset, view)
