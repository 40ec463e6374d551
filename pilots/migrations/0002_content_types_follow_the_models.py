# The content types of the moved models follow them from matcher to pilots, so that their
# permissions (and any user or group holding them) keep their rows. A database created after the
# move has no matcher content type for them: nothing to do.

from django.db import migrations

MODELS = ('pilot', 'pilotstatushistory', 'credential', 'directordecision')


def _move(apps, schema_editor, source, target):
    ContentType = apps.get_model('contenttypes', 'ContentType')
    types = ContentType.objects.using(schema_editor.connection.alias)
    for model in MODELS:
        if types.filter(app_label=target, model=model).exists():
            continue  # already there (the stale one, if any, is remove_stale_contenttypes' to drop)
        types.filter(app_label=source, model=model).update(app_label=target)


def forwards(apps, schema_editor):
    _move(apps, schema_editor, 'matcher', 'pilots')


def backwards(apps, schema_editor):
    _move(apps, schema_editor, 'pilots', 'matcher')


class Migration(migrations.Migration):

    dependencies = [
        ('contenttypes', '0002_remove_content_type_name'),
        ('pilots', '0001_initial'),
        ('matcher', '0009_pilots_moved_to_pilots'),
    ]

    operations = [
        migrations.RunPython(forwards, backwards),
    ]
