"""Webhooks reach only public addresses: refused when saved (the API, the page) and again when
sent, after resolving the name; what a user is told never shows what answered."""

import socket
import threading

import pytest

from core import gdpconfig
from notifications import services
from notifications.models import Notice, NotificationPreference, NotificationRequest
from notifications.tests.conftest import Receiver

URL = "/api/v1/notifications/"
PREFS = "/api/v1/notifications/preferences/"
REFUSED = "a webhook must reach a public address"

LOCAL = [
    "http://127.0.0.1:5432/",
    "http://169.254.169.254/latest/meta-data/",
    "http://[::1]:8000/",
    "http://2130706433/",  # 127.0.0.1 as one number
    "http://0x7f.1/",
    "http://127.1/",
    "http://0177.0.0.1/",
    "http://[::ffff:127.0.0.1]/",
    "http://[::ffff:a9fe:a9fe]/",  # 169.254.169.254, mapped
    "http://[::]/",
    "http://[fe80::1]/",
    "http://[fc00::1]/",
    "http://[ff02::1]/",
    "http://10.1.2.3/",
    "http://172.16.0.1/",
    "http://172.31.255.254/",
    "http://192.168.1.1/",
    "http://100.64.0.1/",
    "http://0.0.0.0/",
    "http://224.0.0.1/",
    "http://239.255.255.250/",
    "http://169.254.1.1/",
    "http://localhost:8000/",
    "http://localhost./",
    "http://127.0.0.1./",
    "http://[::127.0.0.1]/",
    "http://[64:ff9b::a9fe:a9fe]/",  # 169.254.169.254 through NAT64
    "https://user:secret@127.0.0.1/hook",
]


@pytest.fixture
def resolving(monkeypatch):
    """resolving({"hooks.example.org": "10.0.0.5"}): those names resolve so (the others as
    usual); the calls made are in .calls."""
    real = socket.getaddrinfo
    table: dict[str, str] = {}

    def getaddrinfo(host, port, *args, **kwargs):
        if host in table:
            getaddrinfo.calls.append(host)
            family = socket.AF_INET6 if ":" in table[host] else socket.AF_INET
            return [(family, socket.SOCK_STREAM, 6, "", (table[host], port or 0))]
        return real(host, port, *args, **kwargs)

    getaddrinfo.calls = []
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)

    def set_names(names):
        table.update(names)
        return getaddrinfo

    return set_names


def refused(errors) -> bool:
    return any(REFUSED in str(e) for e in errors)


# --- when saved --------------------------------------------------------------------------------


@pytest.mark.parametrize("url", LOCAL)
def test_a_webhook_to_a_local_address_is_refused_as_a_default_through_the_api(users, api, url):
    r = api(users["alice"]).patch(PREFS, {"webhook_url": url}, format="json")
    assert r.status_code == 400, r.data
    assert refused(r.data["webhook_url"]), r.data
    assert not NotificationPreference.objects.exists()


@pytest.mark.parametrize("url", LOCAL)
def test_a_webhook_to_a_local_address_is_refused_in_a_request_through_the_api(
    users, submit, api, url
):
    body = {"job": submit("alice").pk, "channels": ["webhook"], "webhook_url": url}
    r = api(users["alice"]).post(URL, body, format="json")
    assert r.status_code == 400, r.data
    assert refused(r.data["webhook_url"]), r.data
    assert not NotificationRequest.objects.exists()


def test_changing_a_requests_webhook_to_a_local_address_is_refused(users, submit, api):
    body = {"job": submit("alice").pk, "channels": ["webhook"], "webhook_url": "https://a.org/"}
    mine = api(users["alice"]).post(URL, body, format="json").data["id"]
    r = api(users["alice"]).patch(
        f"{URL}{mine}/", {"webhook_url": "http://169.254.169.254/"}, format="json"
    )
    assert r.status_code == 400 and refused(r.data["webhook_url"]), r.data
    assert NotificationRequest.objects.get().webhook_url == "https://a.org/"


@pytest.mark.parametrize("url", LOCAL)
def test_a_webhook_to_a_local_address_is_refused_by_the_pages_forms(users, submit, client, url):
    client.force_login(users["alice"])
    r = client.post("/notifications/", {"action": "preference", "pref-webhook_url": url})
    assert r.status_code == 400 and REFUSED in r.content.decode()
    r = client.post(
        "/notifications/",
        {"action": "request", "req-kind": "job", "req-object_id": submit("alice").pk,
         "req-channels": ["webhook"], "req-outcomes": "both", "req-webhook_url": url},
    )  # fmt: skip
    assert r.status_code == 400 and REFUSED in r.content.decode()
    assert not NotificationPreference.objects.exists()
    assert not NotificationRequest.objects.exists()


@pytest.mark.parametrize("address", ["10.0.0.5", "127.0.0.1", "::1", "169.254.169.254"])
def test_a_name_that_resolves_to_a_local_address_is_refused_when_saved(
    users, api, resolving, address
):
    resolving({"hooks.example.org": address})
    r = api(users["alice"]).patch(
        PREFS, {"webhook_url": "https://hooks.example.org/x"}, format="json"
    )
    assert r.status_code == 400 and refused(r.data["webhook_url"]), r.data
    assert address in str(r.data["webhook_url"])


@pytest.mark.parametrize(
    ("url", "kind"),
    [
        ("http://[::ffff:127.0.0.1]/", "a loopback"),
        ("http://169.254.169.254/", "a link-local"),
        ("http://100.64.0.1/", "a shared (carrier-grade NAT)"),
        ("http://0.0.0.0/", "an unspecified"),
        ("http://[ff02::1]/", "a multicast"),
        ("http://192.168.1.1/", "a private"),
    ],
)
def test_the_refusal_says_what_kind_of_address_it_is(users, api, url, kind):
    r = api(users["alice"]).patch(PREFS, {"webhook_url": url}, format="json")
    assert r.status_code == 400 and f"{kind} address" in str(r.data["webhook_url"]), r.data


def test_a_public_address_or_a_name_that_resolves_to_one_is_accepted(users, api, resolving):
    resolving({"hooks.example.org": "93.184.216.34"})
    for url in (
        "https://hooks.example.org/x",
        "http://93.184.216.34:8080/",
        "http://[2606::1]/",
        "http://[::ffff:93.184.216.34]/",
    ):
        r = api(users["alice"]).patch(PREFS, {"webhook_url": url}, format="json")
        assert r.status_code == 200, (url, r.data)


def test_the_allow_list_lets_an_operator_permit_an_internal_host_or_network(users, api, resolving):
    resolving({"chat.intranet.example": "192.168.7.7"})
    gdpconfig.set_value("WebhookAllowedNetworks", ["10.0.0.0/8", "chat.intranet.example"])
    alice = api(users["alice"])
    for url in ("http://10.1.2.3/", "https://chat.intranet.example/hook", "http://[::ffff:a01:1]/"):
        assert alice.patch(PREFS, {"webhook_url": url}, format="json").status_code == 200, url
    for url in ("http://127.0.0.1/", "http://192.168.7.7/"):  # the name, not its address
        r = alice.patch(PREFS, {"webhook_url": url}, format="json")
        assert r.status_code == 400 and refused(r.data["webhook_url"]), (url, r.data)


def test_the_allow_list_takes_only_host_names_addresses_and_networks(users):
    with pytest.raises(gdpconfig.ConfigError, match="neither a host name"):
        gdpconfig.set_value("WebhookAllowedNetworks", ["10.0.0.0/33"])
    with pytest.raises(gdpconfig.ConfigError, match="neither a host name"):
        gdpconfig.set_value("WebhookAllowedNetworks", ["http://x.org/"])
    assert gdpconfig.get("WebhookAllowedNetworks") == []


# --- when sent ---------------------------------------------------------------------------------


def test_a_name_that_resolves_to_loopback_at_send_time_is_not_posted_to(
    with_email, submit, end, run, api, resolving
):
    receiver = Receiver()  # listening on loopback, not allowed
    try:
        url = f"http://hooks.example.org:{receiver.port}/hook"
        resolving({"hooks.example.org": "93.184.216.34"})
        body = {"webhook_url": url, "scope": "jobs"}
        r = api(with_email["alice"]).patch(PREFS, body, format="json")
        assert r.status_code == 200, r.data
        resolving({"hooks.example.org": "127.0.0.1"})  # the name is rebound meanwhile
        end(submit("alice"))

        run()

        notice = Notice.objects.get()
        assert notice.error == "address not allowed (a local or private address)"
        assert receiver.bodies == []
    finally:
        receiver.close()


def test_a_stored_webhook_in_another_spelling_of_loopback_is_not_posted_to(
    with_email, submit, end, run
):
    receiver = Receiver()
    try:
        job = submit("alice")
        # stored before the rule (no validation here): the send checks again
        services.create_request(
            with_email["alice"],
            {"job_id": job.pk, "channels": ["webhook"],
             "webhook_url": f"http://2130706433:{receiver.port}/hook"},
        )  # fmt: skip
        end(job)
        run()
        assert Notice.objects.get().error.startswith("address not allowed")
        assert receiver.bodies == []
    finally:
        receiver.close()


def test_the_send_connects_to_the_address_it_checked_without_resolving_again(
    with_email, submit, end, run, webhook, resolving
):
    calls = resolving({"hooks.example.org": "127.0.0.1"})
    url = f"http://hooks.example.org:{webhook.port}/hook"
    services.save_preference(with_email["alice"], {"scope": "jobs", "webhook_url": url})
    end(submit("alice"))

    run()

    assert calls.calls == ["hooks.example.org"]  # once: checked, then connected to
    [posted] = webhook.bodies
    assert posted["host"] == f"hooks.example.org:{webhook.port}"
    assert Notice.objects.get().state == Notice.State.SENT


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_closed_port_and_an_open_one_read_the_same_to_the_user(
    with_email, submit, end, run, webhook
):
    gdpconfig.set_value("WebhookTimeoutSeconds", 1)
    silent = socket.socket()  # listens, never answers
    silent.bind(("127.0.0.1", 0))
    silent.listen()
    speaks_not_http = socket.socket()  # answers what is not HTTP, then hangs up
    speaks_not_http.bind(("127.0.0.1", 0))
    speaks_not_http.listen()

    def greet():
        peer, _ = speaks_not_http.accept()
        peer.sendall(b"SSH-2.0-OpenSSH_9.6\r\n")
        peer.close()

    threading.Thread(target=greet, daemon=True).start()
    webhook.status = 503
    targets = {
        "closed": f"http://127.0.0.1:{_closed_port()}/",
        "silent": f"http://127.0.0.1:{silent.getsockname()[1]}/",
        "not http": f"http://127.0.0.1:{speaks_not_http.getsockname()[1]}/",
        "http 503": webhook.url,
    }
    jobs = {}
    for what, url in targets.items():
        job = submit("alice")
        jobs[what] = job.pk
        services.create_request(
            with_email["alice"], {"job_id": job.pk, "channels": ["webhook"], "webhook_url": url}
        )
        end(job)
    try:
        run()
    finally:
        silent.close()
        speaks_not_http.close()

    errors = {what: Notice.objects.get(object_id=pk).error for what, pk in jobs.items()}
    assert errors == {
        "closed": "could not connect",
        "silent": "could not connect",
        "not http": "could not connect",
        "http 503": "delivery failed (HTTP 503)",
    }
