"""Django's admin over the apps' models, registered by the pages (web/admin.py) and not by the
apps themselves: each model keeps its place under its own app in the admin's index and URLs,
and the admin's login goes through the failed-login throttle."""

import pytest
from django.contrib import admin

from web.core.login import AdminLoginForm

# The project's models staff edit or read in the admin, by app label and model, as before the
# registrations moved to web/admin.py.
REGISTERED = {
    "config": {"parametervalue", "cyclerun"},
    "shares": {"gridgroup", "user"},
    "matcher": {"site", "computingelement", "job", "taskqueue"},
    "brokerage": {
        "nucleus",
        "storage",
        "pandaqueue",
        "networklink",
        "dataset",
        "task",
        "globalshare",
        "userquota",
    },
}


def test_the_admin_registers_the_same_models_of_the_apps_as_before():
    registered = {}
    for model in admin.site._registry:
        if model._meta.app_label in REGISTERED:
            registered.setdefault(model._meta.app_label, set()).add(model._meta.model_name)
    assert registered == REGISTERED
    assert admin.site.login_form is AdminLoginForm


@pytest.mark.parametrize(
    "label,model", sorted((label, name) for label, names in REGISTERED.items() for name in names)
)
def test_staff_see_each_models_list_in_the_admin_under_its_apps_url(client, users, label, model):
    client.force_login(users["admin"])

    answer = client.get(f"/admin/{label}/{model}/")

    assert answer.status_code == 200, (label, model)
    assert f'href="/admin/{label}/"' in answer.content.decode()  # the app's own section


def test_the_admin_index_lists_each_apps_section(client, users):
    client.force_login(users["admin"])

    page = client.get("/admin/").content.decode()

    for label in REGISTERED:
        assert f'href="/admin/{label}/"' in page, label
