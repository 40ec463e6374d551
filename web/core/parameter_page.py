"""The live parameters page (/config/): one compact row per parameter, grouped by category.

Every parameter is on the page; a search (?q=) and the "changed from default" view (?changed=1)
mark the others `hidden`, so the page filters without a script and static/js/parameters.js
filters the same rows as one types. A refused value is always shown, whatever the filter.
"""

import json
import re
from collections import defaultdict

from django.utils.text import slugify

from core import gdpconfig
from core.models import ParameterValue
from web.core.forms import ParameterForm

HISTORY_SHOWN = 10


def search_words(q: str) -> list[str]:
    """The words of a search, lowercased; a row matches when its text holds every one."""
    return [w for w in re.split(r"\s+", q.strip().lower()) if w][:20]


def _short(p: gdpconfig.Param, value) -> str:
    """A value on one line: JSON compact, the rest as the form shows it."""
    if p.kind == gdpconfig.JSON:
        return json.dumps(value, separators=(", ", ": "))
    return p.to_text(value)


def _row(p: gdpconfig.Param, versions: list, form: ParameterForm | None) -> dict:
    member = p.name not in gdpconfig.REGISTRY  # a family member with a stored value
    if p.family:
        value, value_text, default_text, changed = None, "", "unset: the general parameter", False
        initial = p.default
    else:
        value = gdpconfig.get(p.name)
        value_text, default_text = _short(p, value), _short(p, p.default)
        changed = member or value != p.default
        initial = value
    if form is None:
        form = ParameterForm(param=p, initial={"value": p.to_text(initial)}, prefix=p.name)
    search = " ".join([p.name, p.category, p.kind, p.unit, p.help]).lower()
    return {
        "param": p,
        "value_text": value_text,
        "default_text": default_text,
        "changed": changed,
        "resettable": changed and not member,
        "member": member,
        "versions": versions[:HISTORY_SHOWN],
        "form": form,
        "search": search,
        "refused": form.is_bound and not form.is_valid(),
    }


def categories(forms_by_name: dict, q: str = "", changed_only: bool = False) -> dict:
    """The page's rows by category, with what the filter shows, and the counts."""
    versions = defaultdict(list)
    for pv in ParameterValue.objects.select_related("changed_by"):
        versions[pv.name].append(pv)
    words = search_words(q)
    params = [*gdpconfig.REGISTRY.values(), *gdpconfig.family_members()]
    by_category: dict[str, list[dict]] = defaultdict(list)
    shown = n_changed = 0
    for p in sorted(params, key=lambda p: (p.category, p.name)):
        row = _row(p, versions.get(p.name, []), forms_by_name.get(p.name))
        matches = all(w in row["search"] for w in words) and (row["changed"] or not changed_only)
        row["hidden"] = not (matches or row["refused"])
        shown += not row["hidden"]
        n_changed += row["changed"]
        by_category[p.category].append(row)
    cats = [
        {
            "name": name,
            "slug": slugify(name) or "general",
            "rows": rows,
            "shown": sum(not r["hidden"] for r in rows),
        }
        for name, rows in by_category.items()
    ]
    return {
        "categories": cats,
        "n_total": len(params),
        "n_shown": shown,
        "n_changed": n_changed,
    }


def refusals(forms_by_name: dict) -> list[dict]:
    """What the error summary at the top says: each refused field, named, with its reason."""
    found = []
    for name, form in forms_by_name.items():
        if not form.is_bound or form.is_valid():
            continue
        for field, errors in form.errors.items():
            bound = form[field] if field in form.fields else form["value"]
            for message in errors:
                # The registry's messages start with the parameter's name, which the summary
                # already shows as the link to the field.
                reason = message.removeprefix(f"{name}: ")
                found.append({"name": name, "field_id": bound.id_for_label, "reason": reason})
    return found
