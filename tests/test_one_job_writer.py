"""The job lifecycle has one writer (docs/developer-guide.md, One writer of the job tables):
matcher.services, with the claim
statement of matcher/claims.py. Every other module of every app (migrations and tests aside)
writes no job table: no ORM write on Job, JobStatusHistory, TaskQueueJob or
TaskQueuePriorityCount (nor creating or deleting a TaskQueue), no save() of a job, no raw SQL
writing their tables, no bulk helper of core.db pointed at them. They move jobs by calling
the service.

This check reads the source (ast): it cannot follow every alias, but it sees the ways the code
wrote these tables before they had one owner. At run time, tests/test_lifecycle_invariants.py
runs the simulated grid (every app that moves jobs) recording which module issues each
statement writing a job table (tests/_one_writer.py): the owner alone, and the membership
invariant holds after every tick.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from django.apps import apps
from django.conf import settings

from matcher.models import Job, JobStatusHistory, TaskQueue, TaskQueueJob, TaskQueuePriorityCount
from tests._one_writer import JOB_TABLES, OWNER, ROOT, SQL_WRITE

JOB_MODELS = {m.__name__: m for m in (Job, JobStatusHistory, TaskQueueJob, TaskQueuePriorityCount)}
# ORM calls that write (or lock for a write) rows of a job model.
WRITES = {
    "update",
    "create",
    "bulk_create",
    "bulk_update",
    "delete",
    "get_or_create",
    "update_or_create",
    "_raw_delete",
    "select_for_update",
}
TASKQUEUE_WRITES = {"create", "bulk_create", "delete", "get_or_create", "_raw_delete"}
DB_HELPERS = {"bulk_insert", "copy_in"}
MANAGERS = {"objects", "_base_manager", "_default_manager"}


def _chain(node: ast.AST) -> list[ast.AST]:
    """The nodes of an attribute/call chain, from the outermost to its root."""
    out = []
    while True:
        out.append(node)
        if isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Attribute | ast.Subscript):
            node = node.value
        else:
            return out


def _table_of(node: ast.AST) -> str | None:
    """The table `Model._meta.db_table` names, for a job model or TaskQueue."""
    text = ast.unparse(node)
    name = text.removesuffix("._meta.db_table")
    model = JOB_MODELS.get(name) or (TaskQueue if name == "TaskQueue" else None)
    return model._meta.db_table if model is not None and name != text else None


class _Finder(ast.NodeVisitor):
    """Writes of job tables in one module. Names bound to job rows or querysets (`job =
    Job.objects.get(...)`, `jobs = Job.objects.filter(...)`, `for job in ...`) and to job
    tables (`table = Job._meta.db_table`) are followed through the module."""

    def __init__(self) -> None:
        self.found: list[str] = []
        self.bound: dict[str, str] = {"job": "Job"}  # name -> job model
        self.tables: dict[str, str] = {}  # name -> job table

    def _add(self, node: ast.AST, what: str) -> None:
        self.found.append(f"line {node.lineno}: {what}")

    def _model(self, node: ast.AST) -> str | None:
        """The job model a chain such as `Job.objects.filter(...)` starts from, if any."""
        chain = _chain(node)
        root = chain[-1]
        if not isinstance(root, ast.Name):
            return None
        if root.id in self.bound:
            return self.bound[root.id]
        attrs = {n.attr for n in chain if isinstance(n, ast.Attribute)}
        if root.id in JOB_MODELS | {"TaskQueue": TaskQueue}:
            made = isinstance(chain[-2], ast.Call) if len(chain) > 1 else False
            if attrs & MANAGERS or made:  # a manager's chain, or a new instance
                return root.id
        return None

    def _render(self, node: ast.AST) -> str:
        """A string or f-string as text, job tables named through a model or a name bound
        to one written out."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.JoinedStr):
            parts = []
            for v in node.values:
                if isinstance(v, ast.FormattedValue):
                    text = ast.unparse(v.value)
                    parts.append(_table_of(v.value) or self.tables.get(text) or "{" + text + "}")
                else:
                    parts.append(self._render(v))
            return "".join(parts)
        return ""

    def _names_a_job_table(self, node: ast.AST) -> bool:
        if isinstance(node, ast.Name) and (node.id in JOB_MODELS or node.id in self.tables):
            return True
        return bool(_table_of(node)) or self._render(node).strip('"') in JOB_TABLES

    def visit_Assign(self, node: ast.Assign) -> None:
        names = [t.id for t in node.targets if isinstance(t, ast.Name)]
        model, table = self._model(node.value), _table_of(node.value)
        for name in names:
            if model:
                self.bound[name] = model
            if table:
                self.tables[name] = table
        self.generic_visit(node)

    def visit_For(self, node: ast.For) -> None:
        # `for job in Job.objects…`, and `for part in among(Job.objects…, ids)` (pieces).
        model = self._model(node.iter)
        if model is None and isinstance(node.iter, ast.Call):
            model = next(filter(None, map(self._model, node.iter.args)), None)
        if model and isinstance(node.target, ast.Name):
            self.bound[node.target.id] = model
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute):
            model = self._model(func.value)
            writes = TASKQUEUE_WRITES if model == "TaskQueue" else WRITES | {"save"}
            if model and func.attr in writes:
                self._add(node, f"{model}….{func.attr}()")
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name in DB_HELPERS and any(self._names_a_job_table(a) for a in node.args):
            self._add(node, f"{name}() into a job table")
        self.generic_visit(node)

    def _sql(self, node: ast.AST, text: str) -> None:
        for match in SQL_WRITE.finditer(text):
            self._add(node, f"SQL {' '.join(match.group(0).split())!r}")

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str):
            self._sql(node, node.value)

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        self._sql(node, self._render(node))
        # not generic_visit: its constant parts were read with the whole string


def findings(source: str) -> list[str]:
    """What in this module's source writes a job table."""
    finder = _Finder()
    finder.visit(ast.parse(source))
    return finder.found


def app_modules() -> list[str]:
    """Every module of the project's apps and of the project root, migrations and tests
    aside, as paths relative to the project's root."""
    roots = {Path(app.path).resolve() for app in apps.get_app_configs()}
    roots.add((ROOT / settings.ROOT_URLCONF.split(".")[0]).resolve())
    out = []
    for root in sorted(r for r in roots if r.is_relative_to(ROOT) and ".venv" not in r.parts):
        for path in sorted(root.rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            parts = set(path.relative_to(root).parts)
            if parts & {"migrations", "tests"} or path.name.startswith(("test_", "conftest")):
                continue
            out.append(rel)
    return out


def test_the_modules_read_are_every_app_s_and_the_owner_is_among_them():
    modules = app_modules()
    assert "matcher/services/moves.py" in modules and "matcher/claims.py" in modules
    for app in ("timeouts/actions.py", "classads/dag_nodes.py", "matcher/bulk.py"):
        assert app in modules
    assert any(m.startswith("simulation/") for m in modules)
    assert any(m.startswith("retention/") for m in modules)
    assert not any("/migrations/" in m or "/tests/" in m for m in modules)


def test_no_module_outside_the_lifecycle_s_owner_writes_a_job_table():
    offenders = {}
    for rel in app_modules():
        if rel.startswith(OWNER):
            continue
        found = findings((ROOT / rel).read_text())
        if found:
            offenders[rel] = found
    assert not offenders, (
        "job tables written outside matcher.services (call the lifecycle service instead):\n"
        + "\n".join(f"{m}: {'; '.join(f)}" for m, f in offenders.items())
    )


def test_the_owner_itself_is_seen_writing_so_the_check_can_see():
    # The check finds the writes it must find: the service's own are the proof.
    moves = findings((ROOT / "matcher/services/moves.py").read_text())
    enqueue = findings((ROOT / "matcher/services/enqueue.py").read_text())
    # The claim statements name their tables from the models (claims.NAMES): read as run.
    from matcher import claims as claim_module

    claims = findings(f"cur.execute({claim_module._CLAIM_SQL!r})")
    assert any("Job….save()" in f for f in moves)
    assert any("SQL 'UPDATE matcher_job'" in f for f in moves)
    assert any("TaskQueue….bulk_create()" in f for f in enqueue)
    assert any("SQL 'INSERT INTO matcher_taskqueueprioritycount'" in f for f in enqueue)
    assert any("INSERT INTO matcher_jobstatushistory" in f for f in claims)


@pytest.mark.parametrize(
    "source",
    [
        "Job.objects.filter(pk=1).update(status='failed')",
        "JobStatusHistory.objects.create(job_id=1, to_status='x')",
        "TaskQueueJob.objects.filter(job_id=1).delete()",
        "TaskQueuePriorityCount.objects.filter(pk=1).update(jobs=F('jobs') + 1)",
        "TaskQueue.objects.bulk_create(rows)",
        "cur.execute('DELETE FROM matcher_taskqueue WHERE id = %s', [1])",
        "among(Job.objects.select_for_update(), 'id', ids)",
        "for part in among(TaskQueueJob.objects.all(), 'job', ids):\n    part.delete()",
        "job = Job.objects.get(pk=1)\njob.status = 'x'\njob.save()",
        "cur.execute('UPDATE matcher_job SET heartbeat = %s', [now])",
        "cur.execute(f'INSERT INTO {JobStatusHistory._meta.db_table} (job_id) VALUES (%s)')",
        "cur.execute(f'DELETE FROM \"matcher_taskqueuejob\" WHERE {where}', params)",
        "table = Job._meta.db_table\ncur.execute(f'UPDATE {table} SET status = %s', ['x'])",
        "jobs = Job.objects.filter(pk=1)\njobs.update(heartbeat=now)",
        "for job in Job.objects.filter(status='sent'):\n    job.delete()",
        "job = Job(owner=u)\njob.save()",
        "db.bulk_insert(cur, Job, columns, rows)",
        "db.copy_in(cur, TaskQueueJob._meta.db_table, cols, data)",
    ],
)
def test_the_check_finds_each_way_of_writing_a_job_table(source):
    assert findings(source), source


@pytest.mark.parametrize(
    "source",
    [
        "Job.objects.filter(status='running').count()",
        "list(TaskQueueJob.objects.values_list('job_id', flat=True))",
        "cur.execute(f'SELECT * FROM {TaskQueuePriorityCount._meta.db_table} c')",
        "TaskQueue.objects.filter(pk=1).update(priority=2.0)",  # the priorities cycle's own
        "cur.execute('UPDATE matcher_taskqueue SET priority = %s', [p])",
        "job_ad.save()",
        "jobs = Job.objects.filter(owner=u)\nn = jobs.count()",
        "services.kill_job(job.pk, user)",
    ],
)
def test_reads_and_service_calls_are_not_writes(source):
    assert not findings(source), source


# --- at run time -------------------------------------------------------------------------------


def _run_as(module: str, source: str) -> None:
    """Run `source` as if it were code of `module` (its frames carry that file name)."""
    exec(compile(source, str(ROOT / module), "exec"), {})


@pytest.mark.django_db
def test_the_run_time_recorder_names_a_module_writing_a_job_table_and_not_the_owner(submit):
    from tests._one_writer import job_writes_outside_owner

    job = submit("alice", cpu_time=100)
    write = (
        "from matcher.models import Job\n"
        f"Job.objects.filter(pk={job.pk}).update(status_reason='written behind its back')\n"
    )
    with job_writes_outside_owner() as outside:
        _run_as("timeouts/elsewhere.py", write)
        _run_as("matcher/services/elsewhere.py", write)  # the owner's own
        _run_as("pilots/services.py", write)  # an app above the matcher: caught too
        Job.objects.filter(pk=job.pk).update(status_reason="a test's own setup")
        from matcher import services

        services.kill_job(job.pk, job.owner)
    assert outside == {
        "timeouts/elsewhere.py": {'UPDATE "matcher_job"'},
        "pilots/services.py": {'UPDATE "matcher_job"'},
    }
