"""The retention cycle: finished work older than its kind's age goes, in bounded batches.

Each batch is one short transaction: lock up to RetentionBatchSize deletable rows (skipping
rows another transaction holds, so a job being rescheduled is left for a later run), write them
to the export if it is on (flushed to disk first: nothing is deleted that was not written), then
delete them with their children. Batches walk the primary key upwards, bounded by the newest row
old enough to qualify, so a run reads the old end of each table only once. A run stops starting
batches after RetentionMaxSecondsPerRun; the next one goes on where the rows are.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

import orjson
from django.db import connection, models, transaction

from core import clock, db, gdpconfig
from core.cycles import current_run_id, cycle
from retention.kinds import KINDS, Kind


class ExportError(RuntimeError):
    """The export could not be written: the batch is not deleted."""


class Exporter:
    """One JSON-lines file per kind and run, appended batch by batch and synced to disk."""

    def __init__(self, directory: str, stamp: str):
        if not directory:
            raise ExportError("RetentionExport is on but RetentionExportDirectory is empty")
        self.directory = Path(directory)
        self.stamp = stamp
        self.files: dict[str, object] = {}
        self.paths: list[str] = []

    def write(self, kind: str, rows: list[dict]) -> None:
        try:
            f = self.files.get(kind)
            if f is None:
                folder = self.directory / kind
                folder.mkdir(parents=True, exist_ok=True)
                path = folder / f"{kind}-{self.stamp}.jsonl"
                f = self.files[kind] = path.open("ab")
                self.paths.append(str(path))
            f.write(b"".join(orjson.dumps({"kind": kind, **row}) + b"\n" for row in rows))
            f.flush()
            os.fsync(f.fileno())
        except OSError as exc:
            raise ExportError(f"cannot write the {kind} export: {exc}") from exc

    def close(self) -> None:
        for f in self.files.values():
            f.close()


@dataclass
class Tally:
    deleted: dict[str, int] = field(default_factory=dict)
    batch_seconds: list[float] = field(default_factory=list)
    largest_batch: int = 0
    more: bool = False
    exported_to: list[str] = field(default_factory=list)


def _leads_an_index(model: type[models.Model], name: str) -> bool:
    field = model._meta.get_field(name)
    if field.db_index or field.unique:
        return True
    return any(
        index.fields and index.fields[0].lstrip("-") == name for index in model._meta.indexes
    )


def _boundary(kind: Kind, cutoff: datetime) -> int | None:
    """The newest primary key of a row born before the cutoff: no row above it can qualify.

    Where `born` leads an index, the row is found by that index: asked for the highest key
    alone, the planner walks the primary key down from the newest row, through every younger
    row (a year of jobs to reach a day's expired ones), expecting the old rows anywhere. A
    row born earlier than this one but given a higher key (committed out of order) waits for
    the next run, whose cutoff is later."""
    rows = kind.model.objects.filter(**{f"{kind.born}__lt": cutoff})
    order = (f"-{kind.born}", "-pk") if _leads_an_index(kind.model, kind.born) else ("-pk",)
    return rows.order_by(*order).values_list("pk", flat=True).first()


def _in(column: str, ids: list[int]) -> tuple[str, list]:
    return db.id_in(f'"{column}"', ids)  # one array parameter


def _delete_rows(model: type[models.Model], ids: list[int]) -> None:
    dependents = db.plain_dependents(model)
    if dependents is None:
        model.objects.filter(pk__in=ids).delete()
        return
    with connection.cursor() as cur:
        for action, table, column in dependents:
            where, params = _in(column, ids)
            if action == "null":
                cur.execute(f'UPDATE "{table}" SET "{column}" = NULL WHERE {where}', params)
            else:
                cur.execute(f'DELETE FROM "{table}" WHERE {where}', params)
        where, params = _in(model._meta.pk.column, ids)
        cur.execute(f'DELETE FROM "{model._meta.db_table}" WHERE {where}', params)


def _delete_batch(kind: Kind, cutoff, after: int, upto: int, size: int, exporter) -> list[int]:
    with transaction.atomic():
        ids = list(
            kind.model.objects.filter(kind.deletable(cutoff), pk__gt=after, pk__lte=upto)
            .order_by("pk")
            .select_for_update(skip_locked=True, of=("self",))
            .values_list("pk", flat=True)[:size]
        )
        if ids:
            if exporter is not None:
                exporter.write(kind.name, kind.export(ids))
            if kind.delete is not None:
                kind.delete(ids)
            else:
                _delete_rows(kind.model, ids)
    return ids


def purge(kind: Kind, cutoff: datetime, size: int, deadline: float, exporter, tally: Tally):
    upto = _boundary(kind, cutoff)
    after, deleted = 0, 0
    while upto is not None:
        if time.monotonic() >= deadline:
            tally.more = True  # the next run goes on
            break
        started = time.perf_counter()
        ids = _delete_batch(kind, cutoff, after, upto, size, exporter)
        if not ids:
            break
        tally.batch_seconds.append(time.perf_counter() - started)
        tally.largest_batch = max(tally.largest_batch, len(ids))
        deleted += len(ids)
        after = ids[-1]
        if len(ids) < size:
            break
    tally.deleted[kind.name] = deleted


def run_retention(now: datetime | None = None, max_seconds: float | None = None) -> Tally:
    """Delete every kind's rows older than its age (0: kept forever), batch by batch."""
    now = now or clock.now()
    budget = gdpconfig.get("RetentionMaxSecondsPerRun") if max_seconds is None else max_seconds
    deadline = time.monotonic() + budget
    size = gdpconfig.get("RetentionBatchSize")
    exporter = None
    if gdpconfig.get("RetentionExport"):
        run = current_run_id("retention")
        stamp = f"{now:%Y%m%dT%H%M%SZ}-" + (f"run{run}" if run else f"pid{os.getpid()}")
        exporter = Exporter(gdpconfig.get("RetentionExportDirectory"), stamp)
    tally = Tally()
    try:
        for kind in KINDS:
            days = gdpconfig.get(kind.age_param)
            if days == 0:
                continue
            purge(kind, now - timedelta(days=days), size, deadline, exporter, tally)
    finally:
        if exporter is not None:
            exporter.close()
            tally.exported_to = exporter.paths
    return tally


@cycle("retention")
def retention_cycle() -> dict:
    tally = run_retention()
    seconds = sorted(tally.batch_seconds)
    return {
        "deleted": tally.deleted,
        "batches": len(seconds),
        "largest_batch": tally.largest_batch,
        "slowest_batch_s": round(seconds[-1], 3) if seconds else 0.0,
        "more": tally.more,
        "exported_to": tally.exported_to,
    }
