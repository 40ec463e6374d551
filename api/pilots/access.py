"""Which job a pilot's request may touch."""

from django.shortcuts import get_object_or_404
from rest_framework.exceptions import PermissionDenied

from matcher.models import Job
from pilots import registry as pilot_registry
from pilots.models import Pilot


def pilot_job(request, pk, reference) -> tuple[Job, int]:
    """(the job, the caller's pilot), if the job was claimed by the caller's own pilot with
    this reference. Staff too report only through their own pilots: they act on other jobs
    with kill and reschedule."""
    job = get_object_or_404(Job.objects.only("pilot"), pk=pk)
    pilot_id = pilot_registry.pilot_id_of(request.user, reference)
    if pilot_id is None or job.pilot_id != pilot_id:
        raise PermissionDenied("a pilot reports only on the jobs it was given")
    return job, pilot_id


def credential_job(request, pk) -> Job:
    """The job, if the caller's credential is the one its pilot acts with: what can be known
    before a request's body is read (its pilot reference may be in the body)."""
    job = get_object_or_404(Job.objects.only("pilot"), pk=pk)
    ours = Pilot.objects.filter(pk=job.pilot_id, credential_user=request.user)
    if job.pilot_id is None or not ours.exists():
        raise PermissionDenied("a pilot reports only on the jobs it was given")
    return job
