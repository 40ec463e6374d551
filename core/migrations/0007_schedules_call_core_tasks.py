# The base app's package is core now (its label stays config): the cycles' django-q2 schedules,
# stored with the dotted path of the function they call, call core.tasks.run instead of
# config.tasks.run, which no longer imports. Schedules of other functions are left alone.

from django.db import migrations

OLD = 'config.tasks.run'
NEW = 'core.tasks.run'


def _rename(apps, schema_editor, source, target):
    Schedule = apps.get_model('django_q', 'Schedule')
    Schedule.objects.using(schema_editor.connection.alias).filter(func=source).update(func=target)


def forwards(apps, schema_editor):
    _rename(apps, schema_editor, OLD, NEW)


def backwards(apps, schema_editor):
    _rename(apps, schema_editor, NEW, OLD)


class Migration(migrations.Migration):

    dependencies = [
        ('config', '0006_throttlewindow'),
        ('django_q', '0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more'),
    ]

    operations = [
        migrations.RunPython(forwards, backwards),
    ]
