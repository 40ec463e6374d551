"""Setting notices through the API and the page: one's own only, bad input named."""

import pytest
from django.core import mail

from notifications.models import NotificationPreference, NotificationRequest

URL = "/api/v1/notifications/"
PREFS = "/api/v1/notifications/preferences/"


def test_a_user_asks_about_a_job_and_sees_it_listed(users, submit, api):
    job = submit("alice")
    r = api(users["alice"]).post(URL, {"job": job.pk, "channels": ["email"]}, format="json")
    assert r.status_code == 201, r.data
    assert r.data["job"] == job.pk and r.data["task"] is None and not r.data["done"]
    listed = api(users["alice"]).get(URL)
    assert [row["id"] for row in listed.data["results"]] == [r.data["id"]]


def test_another_user_can_neither_read_nor_change_ones_requests(users, submit, api):
    job = submit("alice")
    mine = api(users["alice"]).post(URL, {"job": job.pk}, format="json").data["id"]
    bob = api(users["bob"])
    assert bob.get(f"{URL}{mine}/").status_code == 404
    assert bob.patch(f"{URL}{mine}/", {"outcomes": "failed"}, format="json").status_code == 404
    assert bob.delete(f"{URL}{mine}/").status_code == 404
    assert bob.get(URL).data["results"] == []
    assert NotificationRequest.objects.get(pk=mine).outcomes == "both"
    assert api(users["alice"]).delete(f"{URL}{mine}/").status_code == 204


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"job": 987654321}, "job"),
        ({"task": 987654321}, "task"),
        ({}, "job"),
        ({"job": "{alice}", "channels": ["pigeon"]}, "channels"),
        ({"job": "{alice}", "channels": []}, "channels"),
        ({"job": "{alice}", "outcomes": "sometimes"}, "outcomes"),
        ({"job": "{alice}", "channels": ["webhook"], "webhook_url": "ftp://x.org/"}, "webhook_url"),
        ({"job": "{alice}", "channels": ["webhook"]}, "webhook_url"),  # none anywhere
        ({"job": "{alice}", "webhook_url": "https://x.org/" + "a" * 600}, "webhook_url"),
        ({"job": "{bob}"}, "job"),  # bob's job: alice cannot see it
        ({"job": "{alice}", "colour": "red"}, "colour"),
    ],
)
def test_bad_input_answers_400_naming_the_field(users, submit, api, body, field):
    ids = {"{alice}": submit("alice").pk, "{bob}": submit("bob").pk}
    body = {k: ids.get(v, v) if isinstance(v, str) else v for k, v in body.items()}
    r = api(users["alice"]).post(URL, body, format="json")
    assert r.status_code == 400, r.data
    assert field in r.data, r.data
    assert not NotificationRequest.objects.exists()


def test_asking_twice_about_one_job_is_refused(users, submit, api):
    job = submit("alice")
    assert api(users["alice"]).post(URL, {"job": job.pk}, format="json").status_code == 201
    again = api(users["alice"]).post(URL, {"job": job.pk}, format="json")
    assert again.status_code == 400 and "job" in again.data


def test_each_user_reads_and_sets_only_their_own_default(users, api):
    alice, bob = api(users["alice"]), api(users["bob"])
    assert alice.get(PREFS).data == {
        "email": False,
        "webhook_url": "",
        "outcomes": "both",
        "scope": "tasks",  # each task, a job only when asked about: the demo's bulk is not told
        "modified": None,  # never set
    }
    r = alice.patch(
        PREFS,
        {"email": True, "webhook_url": "https://hooks.example.org/x", "outcomes": "failed"},
        format="json",
    )
    assert r.status_code == 200, r.data
    assert alice.patch(PREFS, {"outcomes": "both"}, format="json").data["outcomes"] == "both"
    assert bob.get(PREFS).data["email"] is False
    pref = NotificationPreference.objects.get()
    assert (pref.user, pref.email, pref.outcomes) == (users["alice"], True, "both")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"webhook_url": "javascript:alert(1)"}, "webhook_url"),
        ({"webhook_url": "http://"}, "webhook_url"),
        ({"webhook_url": "https://x.org/" + "a" * 600}, "webhook_url"),
        ({"email": "maybe"}, "email"),
        ({"outcomes": "never"}, "outcomes"),
        ({"user": 1}, "user"),
    ],
)
def test_a_bad_default_answers_400_naming_the_field(users, api, body, field):
    r = api(users["alice"]).patch(PREFS, body, format="json")
    assert r.status_code == 400 and field in r.data, r.data
    assert not NotificationPreference.objects.exists()


def test_the_sent_list_shows_ones_own_notices(users, submit, api, end, run):
    users["alice"].email = "alice@example.org"
    users["alice"].save()
    job = submit("alice")
    api(users["alice"]).post(URL, {"job": job.pk}, format="json")
    end(job)
    run()
    mine = api(users["alice"]).get(f"{URL}sent/").data["results"]
    assert [(n["object_id"], n["state"], n["outcome"]) for n in mine] == [
        (job.pk, "sent", "finished")
    ]
    assert api(users["bob"]).get(f"{URL}sent/").data["results"] == []


# --- the page ----------------------------------------------------------------------------------


def test_the_page_sets_the_default_and_asks_about_a_job(users, submit, client, end, run):
    users["alice"].email = "alice@example.org"
    users["alice"].save()
    client.force_login(users["alice"])
    page = client.get("/")
    assert 'href="/notifications/"' in page.content.decode()  # the header's user link
    r = client.post(
        "/notifications/",
        {"action": "preference", "pref-email": "on", "pref-outcomes": "failed",
         "pref-scope": "jobs"},
    )  # fmt: skip
    assert r.status_code == 302
    assert NotificationPreference.objects.get(user=users["alice"]).outcomes == "failed"

    job = submit("alice")
    shown = client.get(f"/notifications/?job={job.pk}").content.decode()
    assert f'value="{job.pk}"' in shown  # the form asks about that job
    r = client.post(
        "/notifications/",
        {"action": "request", "req-kind": "job", "req-object_id": job.pk,
         "req-channels": ["email"], "req-outcomes": "both"},
    )  # fmt: skip
    assert r.status_code == 302
    pending = client.get("/notifications/").content.decode()
    assert f"job {job.pk}</a>" in pending and "Nothing pending" not in pending
    end(job)
    run()
    assert len(mail.outbox) == 1  # the request (both) and the default (failed only): one mail
    shown = client.get("/notifications/").content.decode()
    assert "Nothing pending" in shown and ">sent<" in shown


def test_the_page_names_the_field_of_a_bad_request(users, submit, client):
    client.force_login(users["alice"])
    bob_job = submit("bob")
    r = client.post(
        "/notifications/",
        {"action": "request", "req-kind": "job", "req-object_id": bob_job.pk,
         "req-channels": ["email"], "req-outcomes": "both"},
    )  # fmt: skip
    assert r.status_code == 400
    assert f"no job {bob_job.pk} that you can see" in r.content.decode()
    r = client.post("/notifications/", {"action": "preference", "pref-webhook_url": "ftp://x"})
    assert r.status_code == 400 and "Enter a valid URL" in r.content.decode()
    assert not NotificationRequest.objects.exists()


def test_the_job_page_knows_where_to_ask(users, submit):
    from web.matcher.selectors import facts_about_job

    job = submit("alice")
    facts = facts_about_job(users["alice"], job)
    assert facts["notification"]["url"] == f"/notifications/?job={job.pk}"
    assert facts["notification"]["request"] is None


@pytest.mark.parametrize(
    ("next_url", "lands_on"),
    [("/jobs/{pk}/", "/jobs/{pk}/"), ("https://evil.example/", "/notifications/")],
)
def test_the_job_pages_button_asks_and_goes_back_only_within_the_site(
    users, submit, client, next_url, lands_on
):
    users["alice"].email = "alice@example.org"
    users["alice"].save()
    client.force_login(users["alice"])
    job = submit("alice")
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert 'name="req-channels" value="email"' in page and "Notify me when it ends" in page
    r = client.post(
        "/notifications/",
        {"action": "request", "req-kind": "job", "req-object_id": job.pk,
         "req-channels": ["email"], "req-outcomes": "both", "next": next_url.format(pk=job.pk)},
    )  # fmt: skip
    assert (r.status_code, r["Location"]) == (302, lands_on.format(pk=job.pk))
    shown = client.get(f"/jobs/{job.pk}/").content.decode()
    assert "You will be told when it ends (email)" in shown


def test_without_an_address_or_webhook_the_job_page_links_to_the_form(users, submit, client):
    users["alice"].email = ""
    users["alice"].save(update_fields=["email"])
    client.force_login(users["alice"])
    job = submit("alice")
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert "Notify me when it ends" not in page.replace("Notify me when it ends…", "")
    assert f'href="/notifications/?job={job.pk}"' in page


def test_a_request_stored_meanwhile_makes_the_second_one_a_400_not_a_500(users, submit, api):
    from notifications import services

    job = submit("alice")
    services.create_request(users["alice"], {"job_id": job.pk, "channels": ["email"]})
    with pytest.raises(Exception) as raised:
        services.create_request(users["alice"], {"job_id": job.pk, "channels": ["email"]})
    assert raised.value.message_dict == {"job": ["you already asked about it"]}
    assert NotificationRequest.objects.count() == 1
