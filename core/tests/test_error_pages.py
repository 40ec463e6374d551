"""A refused form (CSRF) gets the site's framed 403 page saying what to do, not Django's bare
one; a 403 page's Back link goes only to a page of this site, whatever Referer a request
carries."""

import pytest
from django.test import Client

from web.core.error_pages import CSRF_MESSAGE


def test_a_form_posted_without_its_csrf_token_gets_the_framed_page_saying_to_reload(world):
    browser = Client(enforce_csrf_checks=True)
    r = browser.post("/login/", {"username": "alice", "password": "gridwms"})
    assert r.status_code == 403
    html = r.content.decode()
    assert "CSRF verification failed" not in html  # Django's own page
    assert "css/gridwms" in html and "<h1>Not allowed <small>403</small></h1>" in html
    assert "reload the page and try again" in html


def test_a_signed_in_users_expired_form_names_the_cause_not_staff_only(users):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(users["alice"])
    r = browser.post("/jobs/submit/", {"cpu_time": 100})
    assert r.status_code == 403
    html = r.content.decode()
    assert "<nav>" in html and "for staff only" not in html
    assert CSRF_MESSAGE in html


@pytest.mark.parametrize(
    ("referer", "back"),
    [
        ("http://testserver/jobs/?status=failed", 'href="/jobs/?status=failed">Back'),
        ("https://evil.example/phish", None),
        ("http://testserver.evil.example/jobs/", None),
        ("http://testserver//evil.example/", None),
        ("javascript:alert(1)", None),
        ("/jobs/", 'href="/jobs/">Back'),
    ],
)
def test_the_back_link_leads_only_to_a_page_of_this_site(client, users, referer, back):
    client.force_login(users["alice"])
    r = client.get("/config/", HTTP_REFERER=referer)
    assert r.status_code == 403
    html = r.content.decode()
    assert 'href="/">Home</a>' in html
    if back is None:
        assert ">Back</a>" not in html and "evil" not in html and "javascript" not in html
    else:
        assert back in html
