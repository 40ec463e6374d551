from collections import defaultdict

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from core import gdpconfig
from core.models import CycleRun, ParameterValue
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


def _rows(forms_by_name: dict | None = None):
    versions = defaultdict(list)
    for pv in ParameterValue.objects.select_related("changed_by"):
        versions[pv.name].append(pv)
    by_category = defaultdict(list)
    params = [*gdpconfig.REGISTRY.values(), *gdpconfig.family_members()]
    for p in sorted(params, key=lambda p: (p.category, p.name)):
        if p.family:
            by_category[p.category].append(
                {
                    "param": p,
                    "value_text": "",
                    "default_text": f"{p.prefix}… unset: the general parameter",
                    "versions": [],
                    "form": (forms_by_name or {}).get(p.name)
                    or ParameterForm(
                        param=p, initial={"value": p.to_text(p.default)}, prefix=p.name
                    ),
                }
            )
            continue
        value = gdpconfig.get(p.name)
        form = (forms_by_name or {}).get(p.name) or ParameterForm(
            param=p, initial={"value": p.to_text(value)}, prefix=p.name
        )
        by_category[p.category].append(
            {
                "param": p,
                "value_text": p.to_text(value),
                "default_text": p.to_text(p.default),
                "versions": versions.get(p.name, [])[:10],
                "form": form,
            }
        )
    return dict(by_category)


@staff_required
def parameters(request):
    forms_by_name = {}
    if request.method == "POST":
        name = request.POST.get("name", "")
        family = gdpconfig.REGISTRY.get(name)
        if family is not None and family.family:
            # A new member of a family: its name is the prefix plus the suffix typed in.
            suffix = request.POST.get("suffix", "").strip()
            problem = gdpconfig.suffix_problem(family, suffix)
            if problem:
                messages.error(request, f"{family.name}: {problem}")
                return redirect(f"{request.path}#param-{family.name}")
            name = family.prefix + suffix
        p = _param_or_404(name)
        form = ParameterForm(request.POST, param=p, prefix=p.name)
        if form.is_valid():
            gdpconfig.set_value(
                p.name, form.cleaned_data["value"], request.user, form.cleaned_data["comment"]
            )
            messages.success(request, f"{p.name} is now {p.to_text(gdpconfig.get(p.name))}.")
            nxt = request.POST.get("next", "")
            if nxt and url_has_allowed_host_and_scheme(nxt, allowed_hosts={request.get_host()}):
                return redirect(nxt)
            return redirect(f"{request.path}#param-{p.name}")
        forms_by_name[p.name] = form
    # A refused value: the page again with the error beside its field, as a 400.
    return render(
        request,
        "config/parameters.html",
        {"categories": _rows(forms_by_name)},
        status=400 if forms_by_name else 200,
    )


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


def cycle_runs(request):
    filterset = CycleRunFilterSet(request.GET, queryset=CycleRun.objects.all())
    return list_page(request, filterset, "config/cycle_runs.html", name="cycle-runs")
