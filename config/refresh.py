"""The monitoring pages that offer an auto-refresh toggle (off by default; when on, the page
reloads every REFRESH_SECONDS while it is in view). Apps register their pages' URL names (with
their namespace, as `request.resolver_match.view_name` says them) from ready()."""

REFRESH_SECONDS = 30
PAGES: set[str] = set()


def register(*view_names: str) -> None:
    PAGES.update(view_names)


def offered(request) -> bool:
    match = getattr(request, "resolver_match", None)
    return match is not None and match.view_name in PAGES
