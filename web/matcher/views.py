from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import Count
from django.http import Http404, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST
from rest_framework.exceptions import ValidationError

from api.matcher.resources import ResourceDescriptionSerializer
from api.matcher.serializers import JobSubmitSerializer, SubmissionContext
from brokerage.models import TaskJob
from core import gdpconfig
from core.errors import add_to_form, error_messages
from matcher import dispatcher, lifecycle, services
from matcher.jdl import JDLError, parse_jdl
from matcher.models import ComputingElement, Job, Site, TaskQueue
from sandboxes import services as sandboxes
from shares.ownership import may_act_on
from web.core.confirm import confirmation
from web.core.decorators import staff_required
from web.core.listing import list_page
from web.matcher import charts, dashboard, facets, selectors, why
from web.matcher.filters import JobFilterSet, TaskQueueFilterSet
from web.matcher.forms import JDLFilesForm, JDLForm, JobSubmitForm, ResourceForm
from web.matcher.job_ids import JobIds
from web.matcher.sites import site_links


def home(request):
    counts = selectors.visible_jobs_by_status(request.user)
    tqs = selectors.taskqueues_with_counts(TaskQueue.objects.visible_to(request.user))
    context = {
        "counts": counts,
        "total_jobs": sum(counts.values()),
        "status_chart": charts.to_html(charts.jobs_by_status_figure(counts)) if counts else "",
        "top_taskqueues": tqs.order_by("-priority", "id")[:10],
        "taskqueue_count": tqs.count(),
        "sites": Site.objects.annotate(ces=Count("computing_elements")),
        **dashboard.figures(request.user),
    }
    return render(request, "matcher/home.html", context)


def job_list(request):
    qs = Job.objects.visible_to(request.user).select_related("owner", "owner_group")
    filterset = JobFilterSet(request.GET, queryset=qs)

    plan = JobIds(request.user, request.GET)

    def context():  # the HTML page's only: an export reads no job before it is sent
        counts, scanned = facets.status_facets(request.GET, qs, request.user, plan)
        return {"facets": counts, "facets_scanned": scanned}

    return list_page(request, filterset, "matcher/job_list.html", context, name="jobs", plan=plan)


BULK_VERBS = {"kill": ("Kill", "killed"), "reschedule": ("Reschedule", "rescheduled")}


def _bulk_ids(request) -> tuple[list[int], str | None]:
    """The jobs a bulk action names: the ticked ones, or every job the list's filters select
    (`all`, with the list's query in `query`); (ids, why not) when over MaxBulkJobs."""
    limit = gdpconfig.get("MaxBulkJobs")
    if request.POST.get("all") == "1":
        query = QueryDict(request.POST.get("query", ""), mutable=True)
        for paging in ("page", "page_size", "format"):  # the page's, not filters
            query.pop(paging, None)
        visible = Job.objects.visible_to(request.user)
        filterset = JobFilterSet(query, queryset=visible)
        if not filterset.is_valid():
            return [], "the list's filters are not valid any more"
        ids = list(filterset.qs.order_by("id").values_list("id", flat=True)[: limit + 1])
    else:
        ids = sorted({int(v) for v in request.POST.getlist("job") if v.isdigit()})
    if len(ids) > limit:
        return [], f"more than {limit} jobs (MaxBulkJobs): narrow the filters"
    return ids, None


@require_POST
def job_bulk(request):
    """Kill or reschedule many jobs from the jobs list: a confirmation that states the count,
    then one transaction (services.act_on_jobs) and a message naming what was done and what was
    refused. Goes back to the list as it was."""
    back = reverse("job-list") + ("?" + request.POST["query"] if request.POST.get("query") else "")
    action = request.POST.get("action", "")
    if action not in BULK_VERBS:
        messages.error(request, "Choose kill or reschedule.")
        return redirect(back)
    ids, problem = _bulk_ids(request)
    if problem or not ids:
        messages.error(request, f"Nothing done: {problem or 'no job was selected'}.")
        return redirect(back)
    verb, done = BULK_VERBS[action]
    question = f"{verb} {len(ids)} job{'s' if len(ids) != 1 else ''}?"
    if action == "kill":
        question += " They are cancelled wherever they are and do not run again."
    page = confirmation(request, title=f"{verb} jobs", question=question, action=verb, back=back)
    if page is not None:
        return page
    out = services.act_on_jobs(action, ids, request.user, Job.objects.visible_to(request.user))
    if out.done:
        messages.success(request, f"{len(out.done)} {'job' if len(out.done) == 1 else 'jobs'} "
                         f"{done}: {_listed_ids(out.done)}.")  # fmt: skip
    if out.refused:
        why = "; ".join(f"{pk}: {reason}" for pk, reason in sorted(out.refused.items())[:20])
        messages.error(request, f"{len(out.refused)} refused: {why}.")
    return redirect(back)


def _listed_ids(ids: list[int], most: int = 20) -> str:
    shown = ", ".join(map(str, ids[:most]))
    return shown + (f" and {len(ids) - most} more" if len(ids) > most else "")


def job_detail(request, pk):
    job = get_object_or_404(
        Job.objects.visible_to(request.user).select_related(
            "owner", "owner_group", "task_job__task"
        ),
        pk=pk,
    )
    context = {
        "job": job,
        "history": job.history.all(),
        "task_queue": TaskQueue.objects.visible_to(request.user)
        .filter(pk=job.task_queue_id)
        .first(),
        "can_act": may_act_on(request.user, job),
        "actions": lifecycle.offered(job.status, request.user.is_staff),
        "warnings": selectors.job_warnings([job])[job.pk] if job.status == "activated" else [],
        "default_setup": gdpconfig.get("DefaultSetup"),
        "why": why.explain(job),
        # A task job's retry chain, one step each way (the task page shows the whole chain).
        "retried_as": TaskJob.objects.filter(retry_of_id=job.pk)
        .values_list("job_id", flat=True)
        .first()
        if hasattr(job, "task_job")
        else None,
        **site_links(job.site, job.grid_ce),
        **selectors.facts_about_job(request.user, job),
    }
    return render(request, "matcher/job_detail.html", context)


def _job_action(request, pk, fn, verb, ask: tuple[str, str] | None = None):
    """Do `fn` to the job; `ask` = (action, question) asks first (a destructive action)."""
    job = get_object_or_404(
        Job.objects.visible_to(request.user).select_related("owner_group"), pk=pk
    )
    if not may_act_on(request.user, job):
        raise PermissionDenied
    if ask is not None:
        action, question = ask
        page = confirmation(
            request,
            title=f"{action} job {job.pk}",
            question=question,
            action=action,
            back=f"/jobs/{job.pk}/",
        )
        if page is not None:
            return page
    try:
        fn(job.pk, request.user)
        messages.success(request, f"Job {job.pk} {verb}.")
    except services.JobActionError as exc:
        messages.error(request, str(exc))
    return redirect("job-detail", pk=job.pk)


@require_POST
def job_kill(request, pk):
    question = f"Kill job {pk}? It is cancelled wherever it is and does not run again."
    return _job_action(request, pk, services.kill_job, "killed", ask=("Kill", question))


@require_POST
def job_reschedule(request, pk):
    return _job_action(request, pk, services.reschedule_job, "rescheduled")


def _submit(request, payload: dict, jdl: str = "", files=()):
    serializer = JobSubmitSerializer(
        data=payload, context={"submission": SubmissionContext(request.user)}
    )
    if not serializer.is_valid():
        return None, serializer.errors
    spec = dict(serializer.validated_data, jdl=jdl)
    try:  # with input files: the sandboxes app stores them in the same transaction
        [job] = sandboxes.submit_job_with_files(request.user, spec, list(files))
    except DjangoValidationError as exc:
        return None, exc.message_dict
    return job, None


def _submit_jdl(request, jdl_form: JDLForm, files_form: JDLFilesForm) -> tuple[object, list]:
    """The pasted JDL and the files its InputSandbox names: (the job or None, errors)."""
    if not (jdl_form.is_valid() and files_form.is_valid()):
        return None, []  # each form's errors are shown next to its field
    text = jdl_form.cleaned_data["jdl"]
    try:
        payload, names = parse_jdl(text, gdpconfig.get("MaxJDLAttributes"))
    except JDLError as exc:
        return None, [f"{exc.field}: {exc.message}"]
    files = files_form.cleaned_data["input_sandbox"]
    wanted = payload.pop("input_sandbox", [])
    if not isinstance(wanted, list) or not all(isinstance(n, str) for n in wanted):
        return None, ["InputSandbox: must be a list of file names"]
    missing = sorted(set(wanted) - {f.name for f in files})
    if missing:
        return None, [f"InputSandbox: names files not uploaded: {', '.join(missing)}"]
    job, errors = _submit(request, payload, jdl=text, files=files)
    if job:
        return job, []
    out = []
    for where, message in error_messages(errors):
        field = where.split(".")[0].split("[")[0]
        out.append(f"{names.get(field, where)}: {message}")
    return None, out


def job_submit(request):
    form = JobSubmitForm(user=request.user, initial={"user_priority": 1})
    jdl_form, files_form = JDLForm(), JDLFilesForm(prefix="jdl")
    jdl_errors: list[str] = []
    # Files over the limit were read through and dropped (web.core.middleware): the form comes
    # back with what was typed, the refusal next to its file field, nothing submitted.
    dropped = getattr(request, "files_not_kept", None)
    if request.method == "POST" and dropped is not None:
        jdl = "jdl" in request.POST  # the body read: the files' bytes counted
        refusal = sandboxes.input_over_limit(dropped.total)
        if jdl:
            jdl_form, files_form = JDLForm(request.POST), JDLFilesForm(request.POST, prefix="jdl")
            jdl_form.is_valid()
            files_form.is_valid()
            files_form.add_error("input_sandbox", refusal)
        else:
            form = JobSubmitForm(request.POST, user=request.user)
            form.is_valid()
            form.add_error("input_sandbox", refusal)
    elif request.method == "POST":
        if "jdl" in request.POST:
            jdl_form = JDLForm(request.POST)
            files_form = JDLFilesForm(request.POST, request.FILES, prefix="jdl")
            job, jdl_errors = _submit_jdl(request, jdl_form, files_form)
            if job:
                messages.success(request, f"Job {job.pk} submitted from JDL.")
                return redirect("job-detail", pk=job.pk)
        else:
            form = JobSubmitForm(request.POST, request.FILES, user=request.user)
            if form.is_valid():
                files = form.cleaned_data["input_sandbox"]
                job, errors = _submit(request, form.payload(), files=files)
                if job:
                    messages.success(request, f"Job {job.pk} submitted.")
                    return redirect("job-detail", pk=job.pk)
                add_to_form(form, errors)
    return render(
        request,
        "matcher/job_submit.html",
        {"form": form, "jdl_form": jdl_form, "files_form": files_form, "jdl_errors": jdl_errors},
    )


def taskqueue_list(request):
    qs = selectors.taskqueues_with_counts(TaskQueue.objects.visible_to(request.user))
    filterset = TaskQueueFilterSet(request.GET, queryset=qs.order_by("-priority", "id"))
    return list_page(request, filterset, "matcher/taskqueue_list.html", name="taskqueues")


def taskqueue_detail(request, pk):
    tq = (
        selectors.taskqueues_with_counts(TaskQueue.objects.visible_to(request.user))
        .filter(pk=pk)
        .first()
    )
    if tq is None:
        return past_taskqueue(request, pk)
    by_priority = selectors.jobs_by_priority(tq.pk)
    context = {
        "tq": tq,
        "by_priority": by_priority,
        "chart": charts.to_html(charts.jobs_by_priority_figure(by_priority)) if by_priority else "",
        "jobs": Job.objects.visible_to(request.user)
        .filter(task_queue_id=tq.pk, status="activated")
        .order_by("id")[:20],
        **selectors.facts_about_taskqueue(request.user, tq.pk, past=False),
    }
    return render(request, "matcher/taskqueue_detail.html", context)


def past_taskqueue(request, pk):
    """A TaskQueue that emptied and was removed (pilots and jobs keep its id): what is known of
    it, its jobs and where they went, the pilots sent for it and the director's decisions."""
    jobs = Job.objects.visible_to(request.user).filter(task_queue_id=pk)
    facts = selectors.facts_about_taskqueue(request.user, pk, past=True)
    if TaskQueue.objects.filter(pk=pk).exists() or not (jobs.exists() or facts.get("refers")):
        raise Http404(f"no TaskQueue {pk}")  # one you may not see, or an id nothing refers to
    context = {
        "pk": pk,
        "example": jobs.select_related("owner", "owner_group").order_by("id").first(),
        "counts": selectors.jobs_by_status(jobs),
        "jobs": jobs.select_related("owner").order_by("-status_changed", "-id")[:20],
        **facts,
    }
    return render(request, "matcher/taskqueue_past.html", context)


def site_list(request):
    sites = Site.objects.prefetch_related("computing_elements")
    return render(
        request,
        "matcher/site_list.html",
        {"sites": sites, "ce_count": ComputingElement.objects.count()},
    )


@staff_required
def match_resource(request):
    """What would this pilot run? The matching TaskQueues in draw order, with probabilities."""
    form = ResourceForm(request.GET or None)
    rows = None
    if form.is_valid():
        body = ResourceDescriptionSerializer(data=form.payload())
        if body.is_valid():
            try:
                rows = dispatcher.taskqueue_draw_table(body.resource(request.user))
            except ValidationError as exc:
                for key, errs in exc.detail.items():
                    form.add_error(key if key in form.fields else None, errs)
        else:
            for key, errs in body.errors.items():
                form.add_error(key if key in form.fields else None, errs)
    context = {"form": form, "rows": rows, "mode": gdpconfig.get("MatchDrawMode")}
    return render(request, "matcher/match_resource.html", context)
