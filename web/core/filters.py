"""FilterSets that neither ignore what they do not understand nor pretend to have filtered.

A list filtered by `?status=bogus` or by a misspelt parameter used to show every row as if
filtered. A StrictFilterSet names each unknown parameter and each invalid value as an error
(the API answers 400, a page shows the error), and filters nothing out of an invalid query:
its queryset is then empty. The API's filter backend hands a FilterSet's `ordering` to the
cursor pagination, which would otherwise impose its own order. A list with no FilterSet at all
takes no filter either: any parameter its paging, ordering or search does not read answers 400
(StrictFilterBackend for generic views, StrictQueryMixin for plain ViewSets).
"""

from __future__ import annotations

import datetime

import django_filters
from django.core.exceptions import ValidationError
from django.forms.utils import ErrorList
from django_filters.rest_framework import DjangoFilterBackend
from rest_framework import exceptions
from rest_framework.settings import api_settings

# Query parameters that paging and content negotiation read, not the filters.
PAGING_PARAMETERS = frozenset({"page", "cursor", "page_size", "count", "format"})


class InstantFilter(django_filters.IsoDateTimeFilter):
    """An ISO 8601 instant, compared in UTC: any offset a client writes (Python takes up to
    ±23:59) names a valid instant, while PostgreSQL refuses offsets beyond ±15:59 (a 500)."""

    def filter(self, qs, value):
        if isinstance(value, datetime.datetime) and value.tzinfo is not None:
            try:
                value = value.astimezone(datetime.UTC)
            except OverflowError:  # year 1 at -23:59, year 9999 at +23:59
                return qs.none()
        return super().filter(qs, value)


class StrictFilterSet(django_filters.FilterSet):
    def unknown_parameters(self) -> list[str]:
        if not self.is_bound:
            return []
        return sorted(k for k in self.data if k not in self.filters and k not in PAGING_PARAMETERS)

    @property
    def errors(self):
        errors = self.form.errors
        known = ", ".join(sorted(self.filters))
        for name in self.unknown_parameters():
            if name not in errors:
                # The name goes in as a parameter: it is the client's text (a "%" in it must
                # not be read as a format).
                error = ValidationError(
                    "Unknown parameter %(name)s; this list filters by %(known)s.",
                    code="unknown",
                    params={"name": name[:100], "known": known},
                )
                errors[name] = ErrorList([error])
        return errors

    def is_valid(self) -> bool:
        return self.is_bound and not self.errors

    @property
    def qs(self):
        if not hasattr(self, "_qs") and self.is_bound and not self.is_valid():
            self._qs = self.queryset.none()
        return super().qs

    def ordering_fields(self) -> list[str] | None:
        """The model fields of a valid `ordering` parameter, or None."""
        f = self.filters.get("ordering")
        if f is None or not self.is_valid():
            return None
        value = self.form.cleaned_data.get("ordering")
        return [f.get_ordering_value(v) for v in value] if value else None


def allowed_parameters(view) -> set[str]:
    """The query parameters a view reads without a FilterSet: its paginator's (`cursor`,
    `page_size`, `limit`...), `format`, and its ordering and search backends' parameters."""
    allowed = {api_settings.URL_FORMAT_OVERRIDE}
    paginator = getattr(view, "paginator", None)
    if paginator is not None:
        allowed |= {
            value
            for name in dir(paginator)
            if name.endswith("_query_param") and isinstance(value := getattr(paginator, name), str)
        }
    for backend in getattr(view, "filter_backends", ()):
        allowed |= {getattr(backend, a, None) for a in ("ordering_param", "search_param")}
    return allowed - {None}


def reject_unknown_parameters(request, view) -> None:
    """400 naming each query parameter the view would silently ignore."""
    allowed = allowed_parameters(view)
    unknown = sorted(k for k in request.query_params if k not in allowed)
    if unknown:
        takes = ", ".join(sorted(allowed)) or "none"
        raise exceptions.ValidationError(
            {
                name[:100]: [f"Unknown parameter; this list takes no filter (it reads {takes})."]
                for name in unknown
            }
        )


class StrictQueryMixin:
    """For plain ViewSets, which run no filter backend: the same 400 for an unknown parameter,
    after authentication (an anonymous client still learns it must authenticate first)."""

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        reject_unknown_parameters(request, self)


class StrictFilterBackend(DjangoFilterBackend):
    """DjangoFilterBackend with StrictFilterSet behaviour for `filterset_fields` too, and the
    FilterSet's ordering passed on to the cursor pagination (ties broken by id). A view with
    no FilterSet answers 400 to any parameter it does not read rather than ignore it."""

    filterset_base = StrictFilterSet

    def filter_queryset(self, request, queryset, view):
        if self.get_filterset_class(view, queryset) is None:
            reject_unknown_parameters(request, view)
            return queryset
        return super().filter_queryset(request, queryset, view)

    def get_ordering(self, request, queryset, view):
        filterset = self.get_filterset(request, queryset, view)
        fields = filterset.ordering_fields() if isinstance(filterset, StrictFilterSet) else None
        if not fields:
            return None
        if not any(f.lstrip("-") in ("id", "pk") for f in fields):
            fields.append("-id" if fields[0].startswith("-") else "id")
        return tuple(fields)
