from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from core import gdpconfig
from core.models import CycleRun
from web.core import parameter_page
from web.core.confirm import confirmation
from web.core.cycle_filters import CycleRunFilterSet
from web.core.decorators import staff_required
from web.core.forms import ParameterForm
from web.core.listing import list_page


def _param_or_404(name):
    try:
        return gdpconfig.param(name)
    except gdpconfig.ConfigError:
        raise Http404(f"no parameter {name}") from None


@staff_required
def parameters(request):
    """The live parameters; a POST stores one new value. A refused value comes back as a 400:
    the page with the error summary at the top and the refused field focused."""
    forms_by_name = {}
    if request.method == "POST":
        posted = request.POST.get("name", "")
        family = gdpconfig.REGISTRY.get(posted)
        p = family if family is not None and family.family else _param_or_404(posted)
        form = ParameterForm(request.POST, param=p, prefix=p.name)
        if form.is_valid():
            # A new member of a family: its name is the prefix plus the suffix typed in.
            target = p.prefix + form.cleaned_data["suffix"] if p.family else p.name
            try:
                gdpconfig.set_value(
                    target, form.cleaned_data["value"], request.user, form.cleaned_data["comment"]
                )
            except gdpconfig.ConfigError as exc:  # a check against the database (check_on_set)
                form.add_error("value", str(exc))
            else:
                shown = gdpconfig.param(target)
                messages.success(
                    request, f"{target} is now {shown.to_text(gdpconfig.get(target))}."
                )
                nxt = request.POST.get("next", "")
                if nxt and url_has_allowed_host_and_scheme(nxt, allowed_hosts={request.get_host()}):
                    return redirect(nxt)
                return redirect(f"{request.get_full_path()}#param-{target}")
        form.refused()
        forms_by_name[p.name] = form
    q = request.GET.get("q", "")[:200]
    changed = request.GET.get("changed") == "1"
    context = {
        **parameter_page.categories(forms_by_name, q, changed),
        "q": q,
        "changed": changed,
        "refusals": parameter_page.refusals(forms_by_name),
    }
    return render(request, "config/parameters.html", context, status=400 if forms_by_name else 200)


@staff_required
@require_POST
def parameter_rollback(request, name, version):
    p = _param_or_404(name)
    page = confirmation(
        request,
        title=f"Roll {p.name} back",
        question=f"Roll {p.name} back to version {version}? Every process reads it within seconds.",
        action="Roll back",
        back=f"/config/#param-{p.name}",
    )
    if page is not None:
        return page
    try:
        gdpconfig.rollback(p.name, version, request.user)
    except gdpconfig.ConfigError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"{p.name} rolled back to version {version}.")
    return redirect(f"/config/#param-{p.name}")


@staff_required
@require_POST
def parameter_reset(request, name):
    """Store the default as a new version, with who and when, like any other change."""
    p = _param_or_404(name)
    default = p.to_text(p.default)
    said = f"its default, {default}" if len(default) <= 60 else "its default"
    page = confirmation(
        request,
        title=f"Reset {p.name} to its default",
        question=f"Reset {p.name} to {said}? Every process reads it within seconds.",
        action="Reset to default",
        back=f"/config/#param-{p.name}",
    )
    if page is not None:
        return page
    try:
        gdpconfig.reset_to_default(p.name, request.user)
    except gdpconfig.ConfigError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"{p.name} is back to {said}.")
    return redirect(f"/config/#param-{p.name}")


def cycle_runs(request):
    filterset = CycleRunFilterSet(request.GET, queryset=CycleRun.objects.all())
    return list_page(request, filterset, "config/cycle_runs.html", name="cycle-runs")
