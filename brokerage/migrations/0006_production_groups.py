"""The groups that already own production tasks keep the right to submit them: they get the
ProductionManagement property that production tasks now need."""

from django.db import migrations


def grant(apps, schema_editor):
    GridGroup = apps.get_model("shares", "GridGroup")
    Task = apps.get_model("brokerage", "Task")
    owners = Task.objects.filter(kind="production").values("owner_group_id")
    GridGroup.objects.filter(pk__in=owners).update(production_management=True)


class Migration(migrations.Migration):
    dependencies = [
        ("brokerage", "0005_taskjob_job_task_job"),
        ("shares", "0003_gridgroup_production_management"),
    ]

    operations = [migrations.RunPython(grant, migrations.RunPython.noop)]
