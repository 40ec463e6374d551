"""Every API list refuses a query parameter it would ignore: `?status=bogus` on a list with no
filters, or a misspelt `?nmae=`, answers 400 naming it instead of the whole list as if
filtered; the parameters its paging and format read still work."""

import pytest

from api.urls import routes

# Every list the router serves, walked from its routes so that a new one is covered too.
LISTS = [prefix for prefix, viewset, _ in routes if hasattr(viewset, "list")]


def test_the_lists_walked_include_those_without_a_filterset():
    assert {"sites", "nuclei", "storages", "network-links", "datasets"} <= set(LISTS)
    assert {"global-shares", "user-quotas", "groups", "config", "shares", "cycles"} <= set(LISTS)


@pytest.mark.parametrize("prefix", LISTS)
def test_an_unknown_query_parameter_answers_400_naming_it(api, users, prefix):
    r = api(users["admin"]).get(f"/api/v1/{prefix}/?nmae=x")
    assert r.status_code == 400, (prefix, r.status_code)
    assert "nmae" in r.data, r.data


@pytest.mark.parametrize("url", ["/api/v1/sites/?status=bogus", "/api/v1/nuclei/?name=CERN"])
def test_a_filter_on_a_list_that_has_none_is_refused_not_ignored(api, users, url):
    r = api(users["alice"]).get(url)
    assert r.status_code == 400
    [(name, [message])] = r.data.items()
    assert name in url and "Unknown parameter" in message


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/users/me/?nmae=x",
        "/api/v1/config/CycleStaleSeconds/?nmae=x",
        "/api/v1/config/CycleStaleSeconds/history/?nmae=x",
    ],
)
def test_plain_viewsets_refuse_unknown_parameters_too(api, users, url):
    r = api(users["alice"]).get(url)
    assert r.status_code == 400 and list(r.data) == ["nmae"]


def test_paging_and_format_parameters_still_work(api, users):
    alice = api(users["alice"])
    r = alice.get("/api/v1/sites/?page_size=1&format=json")
    assert r.status_code == 200 and len(r.data["results"]) == 1
    assert "cursor=" in r.data["next"]
    assert alice.get(r.data["next"]).status_code == 200


def test_an_anonymous_client_is_told_to_authenticate_before_any_parameter_check(api, db):
    assert api().get("/api/v1/sites/?nmae=x").status_code == 401
    assert api().get("/api/v1/config/?nmae=x").status_code == 401
