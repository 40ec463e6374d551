"""Helpers for the notices' tests: ending jobs the way pilots do, a webhook receiver."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from core import gdpconfig
from matcher import dispatcher, services
from matcher.matching import Resource
from matcher.models import JobStatus


@pytest.fixture
def with_email(users):
    for name in ("alice", "bob", "erin"):
        users[name].email = f"{name}@example.org"
        users[name].save(update_fields=["email"])
    return users


@pytest.fixture
def end():
    """end(job, outcome): a pilot takes the job, runs it and reports it finished or failed."""

    def finish(job, outcome=JobStatus.FINISHED, reason="exit code 0"):
        taken = dispatcher.match_job(
            Resource(site="LCG.CERN.ch", setup="any", cpu_time=10**6), f"p-{job.pk}"
        )
        assert taken is not None and taken.job.id == job.pk, taken
        services.report_job(job.pk, JobStatus.RUNNING, "started")
        return services.report_job(job.pk, outcome, reason)

    return finish


@pytest.fixture
def run():
    """run() -> the notifications cycle's run, as django-q2 starts it."""
    from core.cycles import run_cycle

    def once():
        done = run_cycle("notifications")
        assert done.status == "success", done.error
        return done

    return once


class Receiver:
    """A local webhook on `address`: records each POST's JSON body, its Host header and when
    it came (time.monotonic()), answers `status` after `delay` seconds."""

    def __init__(self, address="127.0.0.1", delay=0.0):
        self.bodies: list[dict] = []
        self.status = 204
        self.delay = delay
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                try:
                    length = int(self.headers.get("Content-Length", 0))
                    receiver.bodies.append(
                        {
                            "content_type": self.headers.get("Content-Type"),
                            "host": self.headers.get("Host"),
                            "at": time.monotonic(),
                            "json": json.loads(self.rfile.read(length)),
                        }
                    )
                    time.sleep(receiver.delay)
                    self.send_response(receiver.status)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                except OSError:
                    pass  # the sender gave up waiting

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer((address, 0), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://{address}:{self.port}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def webhook(db):
    """A local receiver: the operator's allow-list lets webhooks reach 127.0.0.1 (loopback is
    refused otherwise)."""
    gdpconfig.set_value("WebhookAllowedNetworks", ["127.0.0.1"])
    receiver = Receiver()
    yield receiver
    receiver.close()
