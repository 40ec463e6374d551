"""A job's sandbox files: the input files uploaded with its submission, and what its pilot
brought back (stdout, stderr, the output sandbox's files). The bytes live in Django's storage
`sandboxes` (settings.STORAGES), under paths made of the job's id and a random token, never
of a name a user or a pilot gave."""

from django.core.files.storage import storages
from django.db import models

from matcher.models import Job


def sandbox_storage():
    return storages["sandboxes"]


class SandboxKind(models.TextChoices):
    INPUT = "input"
    STDOUT = "stdout"
    STDERR = "stderr"
    OUTPUT = "output"


class SandboxFile(models.Model):
    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="sandbox_files")
    kind = models.CharField(max_length=8, choices=SandboxKind.choices)
    # The sanitised relative name the job sees (input: a plain file name).
    name = models.CharField(max_length=1024)
    size = models.BigIntegerField()
    sha256 = models.CharField(max_length=64)
    file = models.FileField(storage=sandbox_storage, max_length=255)
    # An output file is staged until its pilot's final report: only then is it shown.
    complete = models.BooleanField(default=False)
    created = models.DateTimeField()

    class Meta:
        ordering = ["job", "kind", "name"]
        indexes = [
            models.Index(fields=["job", "kind"], name="sandbox_job_kind"),
            models.Index(fields=["created"], name="sandbox_created"),
        ]

    def __str__(self) -> str:
        return f"{self.job_id}/{self.kind}/{self.name}"
