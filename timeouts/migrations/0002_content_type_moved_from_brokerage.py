# The content type of TimeoutAction follows the model from brokerage to timeouts, so that its
# permissions (and any user or group holding them) keep their rows. A database created after the
# move has no brokerage content type for it: nothing to do.

from django.db import migrations

MODEL = 'timeoutaction'


def _move(apps, schema_editor, source, target):
    ContentType = apps.get_model('contenttypes', 'ContentType')
    types = ContentType.objects.using(schema_editor.connection.alias)
    if types.filter(app_label=target, model=MODEL).exists():
        return  # already there (the stale one, if any, is remove_stale_contenttypes' to drop)
    types.filter(app_label=source, model=MODEL).update(app_label=target)


def forwards(apps, schema_editor):
    _move(apps, schema_editor, 'brokerage', 'timeouts')


def backwards(apps, schema_editor):
    _move(apps, schema_editor, 'timeouts', 'brokerage')


class Migration(migrations.Migration):

    dependencies = [
        ('contenttypes', '0002_remove_content_type_name'),
        ('timeouts', '0001_initial'),
    ]

    operations = [
        migrations.RunPython(forwards, backwards),
    ]
