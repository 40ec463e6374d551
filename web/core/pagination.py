from rest_framework.pagination import CursorPagination


class DefaultCursorPagination(CursorPagination):
    """Cursor pagination: no COUNT over millions of jobs, stable under inserts."""

    ordering = "-id"
    page_size_query_param = "page_size"
    max_page_size = 500
