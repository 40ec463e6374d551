# A task's architecture is parsed once, at submission, and the brokers read only the stored form
# (they no longer parse the text when the stored form is empty). A task without one gets the
# empty structure by default, and this fills the tasks stored without it (created outside
# submit_task, e.g. by a bulk insert) from their text.

from django.db import migrations, models

import brokerage.architecture

KEYS = {"sw_platform", "base_platform", "cpu_specs", "gpu_spec"}


def fill_architecture_spec(apps, schema_editor):
    from brokerage.architecture import ArchitectureError, empty, parse

    Task = apps.get_model("brokerage", "Task")
    tasks = Task.objects.using(schema_editor.connection.alias)
    # Read first, then write: the cursor reads the table this loop writes to.
    stale = [
        Task(pk=pk, architecture=text)
        for pk, text, spec in tasks.values_list("pk", "architecture", "architecture_spec")
        if not (isinstance(spec, dict) and KEYS <= set(spec))
    ]
    for task in stale:
        try:
            task.architecture_spec = parse(task.architecture)
        except ArchitectureError:
            # Never accepted by a submission (the API and submit_task refuse it): no requirement.
            task.architecture_spec = empty()
    tasks.bulk_update(stale, ["architecture_spec"], batch_size=500)


class Migration(migrations.Migration):
    dependencies = [
        ("brokerage", "0009_timeoutaction_moved_to_timeouts"),
    ]

    operations = [
        migrations.AlterField(
            model_name="task",
            name="architecture_spec",
            field=models.JSONField(
                blank=True, default=brokerage.architecture.empty, help_text="parsed architecture"
            ),
        ),
        migrations.RunPython(fill_architecture_spec, migrations.RunPython.noop),
    ]
