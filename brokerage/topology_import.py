"""Importing PanDA's topology from JSON (PanDA imports it from CRIC): queues, storages, nuclei,
links, datasets, software.

The shape follows the seed's examples: `software` is the per-queue JSON CRIC publishes
({"AGLT2": {"cmtconfigs": …, "containers": …, "cvmfs": …, "architectures": …, "tags": …}},
with "ALL" for the global tags), `gpus` the worker-node GPU summaries per queue. Everything is
upserted by name in one transaction; a bad entry raises TopologyError naming it and its field,
and nothing is written.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from brokerage.models import Dataset, NetworkLink, Nucleus, PandaQueue, Replica, Storage
from core import gdpconfig
from matcher.models import ComputingElement, Site

SECTIONS = ("nuclei", "storages", "queues", "links", "datasets", "software", "gpus")


class TopologyError(ValueError):
    def __init__(self, where: str, message: str):
        super().__init__(f"{where}: {message}")
        self.where = where
        self.message = message


def _site(name: str, where: str) -> Site:
    try:
        return Site.objects.get(name=name)
    except Site.DoesNotExist:
        raise TopologyError(f"{where}.site", f"unknown site {name!r}") from None


def _by_name(model, name: str | None, where: str):
    if name in (None, ""):
        return None
    try:
        return model.objects.get(name=name)
    except model.DoesNotExist:
        raise TopologyError(where, f"unknown {model._meta.verbose_name} {name!r}") from None


def _save(obj, where: str) -> None:
    try:
        obj.full_clean(validate_unique=False, validate_constraints=False)
    except ValidationError as exc:
        field, messages = next(iter(exc.message_dict.items()))
        raise TopologyError(f"{where}.{field}", "; ".join(messages)) from None
    obj.save()


def _upsert(model, name: str, fields: dict, where: str):
    obj = model.objects.filter(name=name).first() or model(name=name)
    for key, value in fields.items():
        if key not in {f.name for f in model._meta.get_fields()} and not key.endswith("_id"):
            raise TopologyError(f"{where}.{key}", "unknown field")
        setattr(obj, key, value)
    _save(obj, where)
    return obj


def import_topology(data: dict[str, Any]) -> dict[str, int]:
    """Upsert everything in `data`; returns how many of each were written."""
    if not isinstance(data, dict):
        raise TopologyError("topology", "expected a JSON object")
    unknown = set(data) - set(SECTIONS)
    if unknown:
        raise TopologyError("topology", f"unknown sections {sorted(unknown)}")
    counts = dict.fromkeys(SECTIONS, 0)
    with transaction.atomic():
        for i, n in enumerate(data.get("nuclei", [])):
            where = f"nuclei[{i}]"
            n = dict(n)
            name = n.pop("name", None) or _missing(where, "name")
            n["site"] = _site(n.pop("site", name), where)
            _upsert(Nucleus, name, n, where)
            counts["nuclei"] += 1
        for i, s in enumerate(data.get("storages", [])):
            where = f"storages[{i}]"
            s = dict(s)
            name = s.pop("name", None) or _missing(where, "name")
            s["site"] = _site(s.pop("site", ""), where)
            s["nucleus"] = _by_name(Nucleus, s.pop("nucleus", None), f"{where}.nucleus")
            _upsert(Storage, name, s, where)
            counts["storages"] += 1
        for i, q in enumerate(data.get("queues", [])):
            where = f"queues[{i}]"
            q = dict(q)
            name = q.pop("name", None) or _missing(where, "name")
            q["site"] = _site(q.pop("site", ""), where)
            q["nucleus"] = _by_name(Nucleus, q.pop("nucleus", None), f"{where}.nucleus")
            for key in ("input_storage", "output_storage"):
                q[key] = _by_name(Storage, q.pop(key, None), f"{where}.{key}")
            q["computing_element"] = _by_name(
                ComputingElement, q.pop("computing_element", None), f"{where}.computing_element"
            )
            _upsert(PandaQueue, name, q, where)
            counts["queues"] += 1
        for i, link in enumerate(data.get("links", [])):
            where = f"links[{i}]"
            link = dict(link)
            source = _site(link.pop("source", ""), where)
            nucleus = _by_name(Nucleus, link.pop("nucleus", None), f"{where}.nucleus")
            if nucleus is None:
                _missing(where, "nucleus")
            obj = NetworkLink.objects.filter(source=source, nucleus=nucleus).first()
            obj = obj or NetworkLink(source=source, nucleus=nucleus)
            for key, value in link.items():
                if not hasattr(obj, key):
                    raise TopologyError(f"{where}.{key}", "unknown field")
                setattr(obj, key, value)
            _save(obj, where)
            counts["links"] += 1
        for i, d in enumerate(data.get("datasets", [])):
            where = f"datasets[{i}]"
            d = dict(d)
            name = d.pop("name", None) or _missing(where, "name")
            replicas = d.pop("replicas", [])
            ds = _upsert(Dataset, name, d, where)
            for j, r in enumerate(replicas):
                rwhere = f"{where}.replicas[{j}]"
                r = dict(r)
                storage = _by_name(Storage, r.pop("storage", None), f"{rwhere}.storage")
                if storage is None:
                    _missing(rwhere, "storage")
                obj = Replica.objects.filter(dataset=ds, storage=storage).first()
                obj = obj or Replica(dataset=ds, storage=storage)
                for key, value in r.items():
                    setattr(obj, key, value)
                _save(obj, rwhere)
            counts["datasets"] += 1
        counts["software"] = _import_software(data.get("software") or {})
        counts["gpus"] = _import_gpus(data.get("gpus") or {})
    return counts


def _import_software(per_queue: dict[str, Any]) -> int:
    """The software JSON per queue; "ALL" is the global tags (SOFTWARE_ALL)."""
    for name, software in per_queue.items():
        where = f"software.{name}"
        if not isinstance(software, dict):
            raise TopologyError(where, "expected an object")
        if name == "ALL":
            try:
                gdpconfig.set_value("SOFTWARE_ALL", software, comment="import_topology")
            except gdpconfig.ConfigError as exc:
                raise TopologyError(where, exc.message) from None
        else:
            queue = _by_name(PandaQueue, name, where)
            queue.software = software
            queue.save(update_fields=["software"])
    return len(per_queue)


def _import_gpus(per_queue: dict[str, Any]) -> int:
    """The worker-node GPU summaries per queue."""
    for name, rows in per_queue.items():
        where = f"gpus.{name}"
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            raise TopologyError(where, "expected a list of worker-node GPU rows")
        queue = _by_name(PandaQueue, name, where)
        queue.gpu_summary = rows
        queue.save(update_fields=["gpu_summary"])
    return len(per_queue)


def _missing(where: str, field: str):
    raise TopologyError(f"{where}.{field}", "is required")
