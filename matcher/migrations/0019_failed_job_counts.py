"""The failed jobs' counts by the hour and day they failed (matcher/services/failures.py), the
error summary's rollup, filled from the failed jobs in the job table (with their task when
brokerage's table is there: on a new database it comes after, with no job in either)."""

from django.db import migrations, models

FILL = """
INSERT INTO matcher_failedjobcount (kind, span, start, owner_id, owner_group_id, site,
    error_code, error_category, reason, task_id, jobs, first_job)
SELECT kind, span, start, owner_id, owner_group_id, site, error_code, error_category, reason,
    task_id, count(*), min(job_id)
FROM (
    SELECT k.kind, s.span,
        (CASE s.span WHEN 1 THEN date_trunc('hour', x.changed AT TIME ZONE 'UTC')
         ELSE date_trunc('day', x.changed AT TIME ZONE 'UTC') END) AT TIME ZONE 'UTC' AS start,
        CASE WHEN k.kind IN ('g', 't') THEN 0 ELSE x.owner_id END AS owner_id,
        x.owner_group_id,
        CASE WHEN k.kind IN ('g', 'o') THEN x.site ELSE '' END AS site,
        CASE WHEN k.kind IN ('g', 'o') THEN x.error_code END AS error_code,
        CASE WHEN k.kind IN ('g', 'o') THEN x.error_category ELSE '' END AS error_category,
        CASE WHEN k.kind IN ('g', 'o') THEN x.reason ELSE '' END AS reason,
        CASE WHEN k.kind IN ('g', 'o') THEN x.task_id ELSE 0 END AS task_id,
        x.job_id
    FROM (
        SELECT j.id AS job_id, j.status_changed AS changed, j.owner_id, j.owner_group_id,
            j.site, j.error_code, j.error_category, j.status_reason AS reason, {task} AS task_id
        FROM matcher_job j {join}
        WHERE j.status = 'failed'
    ) x
    CROSS JOIN (VALUES ('g'), ('t'), ('o'), ('u')) k(kind)
    CROSS JOIN (VALUES (1), (24)) s(span)
) e
GROUP BY kind, span, start, owner_id, owner_group_id, site, error_code, error_category, reason,
    task_id
"""


def fill(apps, schema_editor):
    with schema_editor.connection.cursor() as cur:
        cur.execute("SELECT to_regclass('brokerage_taskjob') IS NOT NULL")
        if cur.fetchone()[0]:
            task, join = (
                "coalesce(t.task_id, 0)",
                "LEFT JOIN brokerage_taskjob t ON t.job_id = j.id",
            )
        else:
            task, join = "0", ""
        cur.execute(FILL.format(task=task, join=join))


class Migration(migrations.Migration):
    dependencies = [
        ("matcher", "0018_taskqueue_fillfactor"),
    ]

    operations = [
        migrations.CreateModel(
            name="FailedJobDelta",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("job_id", models.BigIntegerField()),
                ("n", models.SmallIntegerField()),
                ("changed", models.DateTimeField()),
                ("owner_id", models.BigIntegerField()),
                ("owner_group_id", models.BigIntegerField()),
                ("site", models.CharField(blank=True, max_length=128)),
                ("error_code", models.IntegerField(blank=True, null=True)),
                ("error_category", models.CharField(blank=True, max_length=32)),
                ("reason", models.CharField(blank=True, max_length=255)),
                ("task_id", models.BigIntegerField(default=0)),
            ],
        ),
        migrations.CreateModel(
            name="FailedJobCount",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("kind", models.CharField(max_length=1)),
                ("span", models.SmallIntegerField()),
                ("start", models.DateTimeField()),
                ("owner_id", models.BigIntegerField()),
                ("owner_group_id", models.BigIntegerField()),
                ("site", models.CharField(blank=True, max_length=128)),
                ("error_code", models.IntegerField(blank=True, null=True)),
                ("error_category", models.CharField(blank=True, max_length=32)),
                ("reason", models.CharField(blank=True, max_length=255)),
                ("task_id", models.BigIntegerField(default=0)),
                ("jobs", models.BigIntegerField(default=0)),
                ("first_job", models.BigIntegerField(blank=True, null=True)),
            ],
            options={
                "indexes": [
                    models.Index(
                        condition=models.Q(("kind", "o")),
                        fields=["owner_id", "span", "start"],
                        name="failedjobcount_owner",
                    )
                ],
                "constraints": [
                    models.UniqueConstraint(
                        fields=(
                            "kind",
                            "span",
                            "start",
                            "owner_id",
                            "owner_group_id",
                            "site",
                            "error_code",
                            "error_category",
                            "reason",
                            "task_id",
                        ),
                        name="failedjobcount_key",
                        nulls_distinct=False,
                    )
                ],
            },
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
    ]
