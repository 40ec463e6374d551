"""A fresh sandbox storage per test, and a pilot that takes a job over the API (the fixtures
pilots/tests/conftest.py takes too)."""

import pytest
from django.core.files.storage import storages
from django.core.files.uploadedfile import SimpleUploadedFile

from matcher.models import Job
from sandboxes.models import SandboxFile

JOB = {"cpu_time": 100, "sites": ["LCG.CERN.ch"]}


@pytest.fixture
def sandbox_root(tmp_path, settings):
    """The `sandboxes` storage in the test's own directory."""
    root = tmp_path / "sandboxes"
    settings.STORAGES = {
        **settings.STORAGES,
        "sandboxes": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(root)},
        },
    }
    # Django forgets its storages when STORAGES changes (django.test.signals).
    assert storages["sandboxes"].location == str(root)
    return root


def stored_files(root) -> list:
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


def nothing_stored(root) -> bool:
    return not Job.objects.exists() and not SandboxFile.objects.exists() and not stored_files(root)


def upload(name: str, data: bytes = b"x") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, data)


class Pilot:
    """The generic pilot credential taking a job at LCG.CERN.ch and reporting on it."""

    def __init__(self, client, reference="p-1"):
        self.api, self.reference = client, reference

    def take(self) -> dict:
        resource = {
            "site": "LCG.CERN.ch",
            "grid_ce": "ce504.cern.ch",
            "cpu_time": 86400,
            "platform": ["x86_64-el9"],
            "pilot_reference": self.reference,
        }
        answer = self.api.post("/api/v1/match/", resource, format="json")
        assert answer.status_code == 200, answer.content
        return answer.json()

    def report(self, job: int, status: str, **extra):
        body = {"pilot_reference": self.reference, "status": status, **extra}
        return self.api.post(f"/api/v1/jobs/{job}/status/", body, format="json")

    def heartbeat(self, job: int, **extra):
        body = {"pilot_reference": self.reference, **extra}
        return self.api.post(f"/api/v1/jobs/{job}/heartbeat/", body, format="json")

    def upload(self, job: int, **parts):
        form = {"pilot_reference": self.reference, **parts}
        return self.api.post(f"/api/v1/jobs/{job}/output/", form, format="multipart")


@pytest.fixture
def pilot(api, users):
    from matcher import dispatcher

    dispatcher.invalidate_cache()
    return Pilot(api(users["pilot"]))


def multipart(fields: dict, files: list[tuple[str, str, bytes]]) -> tuple[bytes, str]:
    """A multipart/form-data body built by hand (file names exactly as given: Django's test
    client keeps only a name's last component): (body, content type)."""
    boundary = "gridwms-test-boundary"
    out = b""
    for name, value in fields.items():
        out += f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'.encode()
        out += value.encode() + b"\r\n"
    for part, filename, data in files:
        quoted = filename.replace("\\", "\\\\").replace('"', '\\"')
        head = f'Content-Disposition: form-data; name="{part}"; filename="{quoted}"\r\n'
        out += f"--{boundary}\r\n{head}Content-Type: application/octet-stream\r\n\r\n".encode()
        out += data + b"\r\n"
    out += f"--{boundary}--\r\n".encode()
    return out, f"multipart/form-data; boundary={boundary}"


@pytest.fixture(autouse=True)
def _own_sandbox_root(sandbox_root):
    """Every test here writes to its own sandbox storage."""
    return sandbox_root
