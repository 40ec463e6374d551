"""Pages load plotly (its basic bundle, 1.2 MB) only where a chart is, without holding the page
up; in production mode every static URL is hashed and cached for good (whitenoise)."""

import re

import pytest
from django.core.management import call_command
from django.test import Client, override_settings

from simulation import demo as pilot_demo


def _scripts(html: str) -> list[str]:
    return re.findall(r"<script\b[^>]*>", html)


def test_a_page_loads_only_the_deferred_site_script_which_fetches_plotly_for_charts(
    client, users, submit
):
    submit("alice", cpu_time=100)
    pilot_demo.first_pilots()
    client.force_login(users["admin"])
    for url in ("/jobs/", "/", "/taskqueues/", "/pilots/director/"):
        html = client.get(url).content.decode()
        external = [s for s in _scripts(html) if "src=" in s]
        assert len(external) == 1, (url, external)
        assert "/static/js/gridwms.js" in external[0] and " defer" in external[0]
        assert not re.search(r"<script[^>]*src=\"[^\"]*plotly", html), url
    home = client.get("/").content.decode()
    assert 'data-chart="' in home  # its charts, as data for the site script to draw


@pytest.mark.django_db
def test_in_production_mode_plotly_comes_from_a_hashed_url_cached_for_good(tmp_path, users):
    manifest = {
        "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
        "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
    }
    with override_settings(DEBUG=False, STATIC_ROOT=tmp_path, STORAGES=manifest):
        call_command("collectstatic", interactive=False, verbosity=0)
        client = Client()  # its middleware (whitenoise) starts in production mode
        client.force_login(users["admin"])
        html = client.get("/").content.decode()
        site = re.search(r'<script src="(/static/js/gridwms\.[0-9a-f]{12}\.js)"[^>]*defer', html)
        bundle = r'data-plotly="(/static/vendor/plotly-basic\.min\.[0-9a-f]{12}\.js)"'
        plotly = re.search(bundle, html)
        assert site and plotly, _scripts(html)
        for url in (site.group(1), plotly.group(1)):
            r = client.get(url)
            assert r.status_code == 200, url
            assert r["Cache-Control"] == "max-age=315360000, public, immutable", url
