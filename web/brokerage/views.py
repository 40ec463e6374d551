from urllib.parse import quote

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.db.models import Count
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from api.brokerage.serializers import STAFF_FIELDS, TaskSubmitSerializer
from brokerage import lifecycle, production
from brokerage.models import BrokerageRun, GlobalShare, Nucleus, PandaQueue, Task
from brokerage.network import LinkData, network_weight
from brokerage.services import analysis as analysis_services
from brokerage.services import world
from brokerage.services.actions import TaskActionError, kill_task, retry_task
from brokerage.services.submission import TaskRefused, submit_task, task_outputs
from core import clock, gdpconfig
from core.errors import add_to_form
from sandboxes import services as sandboxes
from shares.ownership import may_act_on
from web.brokerage import charts, task_page
from web.brokerage.filters import BrokerageRunFilterSet, TaskFilterSet
from web.core.confirm import confirmation
from web.core.listing import list_page
from web.matcher.charts import to_html
from web.matcher.forms import MultipleFileField


def task_list(request):
    qs = Task.objects.visible_to(request.user).select_related("owner", "owner_group", "nucleus")
    filterset = TaskFilterSet(request.GET, queryset=qs)

    def with_job_counts(tasks):
        counts = lifecycle.job_counts(t.pk for t in tasks)
        for task in tasks:
            task.jobs = counts.get(task.pk)

    return list_page(
        request, filterset, "brokerage/task_list.html", name="tasks", decorate=with_job_counts
    )


def decision_list(request):
    """Every brokerage decision of the tasks the user may see, newest first."""
    tasks = Task.objects.visible_to(request.user)
    qs = BrokerageRun.objects.filter(task__in=tasks).select_related("task").defer("trace")
    filterset = BrokerageRunFilterSet(request.GET, queryset=qs)
    return list_page(request, filterset, "brokerage/decision_list.html", name="decisions")


def task_detail(request, pk):
    task = get_object_or_404(
        Task.objects.visible_to(request.user).select_related(
            "owner", "owner_group", "nucleus", "parent"
        ),
        pk=pk,
    )
    runs = list(BrokerageRun.objects.filter(task=task).defer("trace")[:30])
    run = None
    if runs:
        wanted = request.GET.get("run")
        run_id = int(wanted) if wanted and wanted.isdigit() else runs[0].pk
        run = BrokerageRun.objects.filter(task=task, pk=run_id).first()
    context = {
        "task": task,
        "runs": runs,
        "run": run,
        "inputs": task.inputs.select_related("dataset"),
        "jobs": lifecycle.job_counts([task.pk]).get(task.pk),
        "outputs": [
            (f, f"/api/v1/jobs/{f.job_id}/sandbox/{quote(f.name)}") for f in task_outputs(task.pk)
        ],
        "may_act": may_act_on(request.user, task),
        "ended": task.status in lifecycle.FINAL_TASK_STATES,
        **task_page.context(task.pk),
    }
    if run is not None:
        candidates = run.candidates
        kept = [c for c in candidates if not c.get("removed_by")]
        order = {name: i for i, name in enumerate(run.chosen)}
        context["candidates"] = sorted(
            candidates,
            key=lambda c: (
                bool(c.get("removed_by")),
                order.get(c["name"], len(order)),
                -(c.get("weight") or 0),
                c["name"],
            ),
        )
        if run.throttle is None:
            # A throttled run looked at no candidate: its page shows the throttle instead.
            removed = charts.removed_by_figure(run.removed_counts, len(kept))
            context["removed_chart"] = to_html(removed)
        if kept:
            context["weights_chart"] = to_html(charts.weights_figure(kept, run.chosen))
    return render(request, "brokerage/task_detail.html", context)


class TaskForm(forms.Form):
    """The common parameters; the API takes every one of them. Staff also set the priority,
    global share and class, which for anyone else the system sets."""

    kind = forms.ChoiceField(
        choices=Task.Kind.choices,
        required=False,
        help_text="production needs a group with the ProductionManagement property",
    )
    name = forms.CharField(max_length=200)
    owner_group = forms.CharField(max_length=64)
    processing_type = forms.CharField(max_length=64, initial="simul")
    priority = forms.IntegerField(initial=500, required=False)
    gshare = forms.ChoiceField(label="gshare", required=False)
    task_class = forms.ChoiceField(
        choices=[("", "—"), ("S", "S"), ("A", "A"), ("B", "B"), ("C", "C")], required=False
    )
    core_count = forms.IntegerField(initial=1, min_value=1)
    ram_count = forms.IntegerField(initial=2000, min_value=0, label="ramCount (MB per core)")
    cpu_time = forms.FloatField(initial=100.0, label="cpuTime (HS06 s per event)")
    n_jobs = forms.IntegerField(initial=10, min_value=1, max_value=10000)
    n_events_per_job = forms.IntegerField(initial=100, min_value=1)
    release = forms.CharField(max_length=128, required=False, help_text="e.g. Athena-24.0.30")
    architecture = forms.CharField(
        max_length=512,
        required=False,
        help_text="e.g. x86_64-el9-gcc13-opt or #&nvidia:model=.*A100.*:vram>=40960",
    )
    inputs = forms.CharField(max_length=2000, required=False, help_text="dataset names, commas")
    executable = forms.CharField(
        max_length=1024,
        required=False,
        strip=False,
        help_text="what each job runs, e.g. /bin/echo; empty: simulated work",
    )
    arguments = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 2}),
        required=False,
        help_text="one a line; %RNDM:N reads N + the job's number (0, 1, ...)",
    )
    environment = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 2}), required=False, help_text="NAME=value, one a line"
    )
    output_sandbox = forms.CharField(
        max_length=2000, required=False, help_text="files each job brings back, commas"
    )
    input_sandbox = MultipleFileField(required=False, help_text="files each job is given")
    job_cpu_time = forms.IntegerField(
        min_value=1,
        label="CPU time per job (s)",
        required=False,
        help_text="empty: 3600, or 300 with an executable",
    )

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        if not user.is_staff:
            for name in STAFF_FIELDS:
                del self.fields[name]
            return
        shares = GlobalShare.objects.values_list("name", flat=True)
        self.fields["gshare"].choices = [("", "—"), *[(n, n) for n in shares]]


def _payload(data: dict, form: forms.Form) -> dict:
    """The form's payload fields as the API takes them (lines, NAME=value, commas)."""
    lines = data.pop("arguments", "").splitlines()
    if lines:
        data["arguments"] = lines
    env = {}
    for line in data.pop("environment", "").splitlines():
        if line.strip():
            name, sep, value = line.partition("=")
            if not sep:
                form.add_error("environment", f"{line[:60]!r} is not NAME=value")
            env[name.strip()] = value
    if env:
        data["environment"] = env
    patterns = [p.strip() for p in data.pop("output_sandbox", "").split(",") if p.strip()]
    if patterns:
        data["output_sandbox"] = patterns
    return data


def task_submit(request):
    form = TaskForm(request.POST or None, request.FILES or None, user=request.user)
    if request.method == "POST" and form.is_valid():
        data = {k: v for k, v in form.cleaned_data.items() if v not in ("", None, [])}
        files = data.pop("input_sandbox", [])
        # A staff field the form does not offer this user, posted anyway: the API's answer.
        posted = [k for k in STAFF_FIELDS if k not in form.fields and k in request.POST]
        data.update({k: request.POST[k] for k in posted})
        data["inputs"] = [
            {"dataset": n.strip()} for n in data.pop("inputs", "").split(",") if n.strip()
        ]
        data = _payload(data, form)
        body = TaskSubmitSerializer(data=data, context={"request": request})
        try:
            sandboxes.check_inputs(files)
        except sandboxes.SandboxError as exc:
            form.add_error("input_sandbox", exc.message)
        if not body.is_valid():
            add_to_form(form, body.errors)
        elif not form.errors:
            fields = dict(body.validated_data)
            inputs = [(i["dataset"], i["master"]) for i in fields.pop("inputs", [])]
            try:
                task = submit_task(request.user, fields, inputs, files)
            except TaskRefused as exc:
                form.add_error(exc.field if exc.field in form.fields else None, exc.message)
            else:
                messages.success(request, f"Task {task.pk} submitted with {task.n_jobs} jobs.")
                return redirect("task-detail", pk=task.pk)
    if not form.is_bound:
        # A production group first, if the user has one; else an analysis task.
        group = request.user.grid_groups.order_by("-production_management", "name").first()
        form.initial["owner_group"] = group.name if group else ""
        production = group is not None and group.production_management
        form.initial["kind"] = Task.Kind.PRODUCTION if production else Task.Kind.ANALYSIS
    return render(request, "brokerage/task_submit.html", {"form": form})


def _task_action(request, pk, fn, verb: str, ask: tuple[str, str] | None = None):
    task = get_object_or_404(
        Task.objects.visible_to(request.user).select_related("owner_group"), pk=pk
    )
    if not may_act_on(request.user, task):
        raise PermissionDenied
    if ask is not None:
        action, question = ask
        back = f"/tasks/{task.pk}/"
        page = confirmation(
            request, title=f"{action} task {task.pk}", question=question, action=action, back=back
        )
        if page is not None:
            return page
    try:
        fn(task.pk, request.user)
        messages.success(request, f"Task {task.pk} {verb}.")
    except TaskActionError as exc:
        messages.error(request, str(exc))
    return redirect("task-detail", pk=task.pk)


@require_POST
def task_kill(request, pk):
    question = f"Kill task {pk}? Its jobs not ended yet are cancelled and the task ends."
    return _task_action(request, pk, kill_task, "killed", ask=("Kill", question))


@require_POST
def task_retry(request, pk):
    return _task_action(request, pk, retry_task, "retried: its unsuccessful jobs run again")


def queue_weights(request):
    """Every queue with its counts and the basic (task-independent) job-brokerage weight, as
    the production brokerage's rules give it (production.basic_weight)."""
    rows = []
    for q in world.load_queues():
        weight, factors = production.basic_weight(q)
        rows.append(
            {
                "queue": q,
                "counts": q.counts,
                # The numbers the analysis page and the brokers' traces read (world).
                **world.queue_standing(q),
                "many_assigned": factors["manyAssigned"],
                "weight": weight,
            }
        )
    rows.sort(key=lambda r: -r["weight"])
    return render(
        request,
        "brokerage/queue_weights.html",
        {"rows": rows, "chart": to_html(charts.queue_weights_figure(rows)) if rows else ""},
    )


def nucleus_list(request):
    nuclei = world.load_nuclei()
    tasks = dict(
        Task.objects.filter(nucleus__isnull=False)
        .values_list("nucleus_id")
        .annotate(n=Count("pk"))
        .order_by()
    )
    for n in nuclei:
        n.task_count = tasks.get(n.pk, 0)
        n.free = sum(s.space_free for s in n.storages_list)
        n.total = sum(s.space_total for s in n.storages_list)
    return render(request, "brokerage/nucleus_list.html", {"nuclei": nuclei})


def nucleus_detail(request, pk):
    nucleus = next((n for n in world.load_nuclei() if n.pk == pk), None)
    if nucleus is None:
        nucleus = get_object_or_404(Nucleus, pk=pk)
    cap = gdpconfig.get("NQUEUED_SAT_CAP")
    importance = gdpconfig.get("NW_QUEUE_IMPORTANCE")
    links = []
    for link in nucleus.links.select_related("source").order_by("source__name"):
        data = LinkData(link.queued_files, link.mbps_1h, link.mbps_1d, link.mbps_1w, link.closeness)
        weight, factors = network_weight(data, False, cap, importance)
        links.append({"link": link, "weight": weight, "factors": factors})
    tasks = (
        Task.objects.visible_to(request.user).filter(nucleus=nucleus).select_related("owner")[:50]
    )
    return render(
        request,
        "brokerage/nucleus_detail.html",
        {
            "nucleus": nucleus,
            "queues": PandaQueue.objects.filter(nucleus=nucleus).select_related("site"),
            "links": links,
            "tasks": tasks,
        },
    )


def analysis_user(request):
    """One user's analysis standing: caps against usage, the User Analysis share against its
    target, and the Analysis Stabilizer's max_q_len per queue against the user's queued jobs."""
    from shares.models import User
    from web.shares.people import user_named_or_404

    username = request.GET.get("user") if request.user.is_staff else None
    user = user_named_or_404(username) if username else request.user
    params = analysis_services.analysis_params()
    queues = world.load_queues()
    usage, caps = analysis_services.user_caps(user, queues, params)
    owner_counts = analysis_services.queue_owner_counts(queues)
    trr = analysis_services.to_running_rates(queues, clock.now())
    rows = analysis_services.stabilizer_table(user.pk, queues, owner_counts, trr, params)
    for row in rows:
        # The queue's own limit, which the brokerage's queue_length check compares nQ with.
        row["queue_length_limit"] = world.queue_standing(row["queue"])["queue_length_limit"]
    tasks = Task.objects.visible_to(request.user).filter(owner=user, kind=Task.Kind.ANALYSIS)[:20]
    return render(
        request,
        "brokerage/analysis_user.html",
        {
            "subject": user,
            "usage": usage,
            "caps": caps,
            "rows": rows,
            "tasks": tasks,
            "users": User.objects.order_by("username") if request.user.is_staff else [],
            "chart": to_html(charts.stabilizer_figure(rows)) if rows else "",
        },
    )
