# Each timeout action carries its job's owner and group (copied from the job, whose owner and
# group never change), so that a user's actions are read on their own indexes, newest first,
# and not by joining every job the user may see. The rows there are filled from their jobs;
# the rows of jobs already deleted keep none (as before, no user but staff sees them).

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

FILL = """
UPDATE timeouts_timeoutaction a
   SET owner_id = j.owner_id, owner_group_id = j.owner_group_id
  FROM matcher_job j
 WHERE j.id = a.job_id AND a.owner_id IS NULL
"""


class Migration(migrations.Migration):

    dependencies = [
        ('shares', '0003_gridgroup_production_management'),
        ('timeouts', '0003_table_takes_the_apps_name'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name='timeoutaction',
            name='owner',
            field=models.ForeignKey(blank=True, db_constraint=False, db_index=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to=settings.AUTH_USER_MODEL),
        ),
        migrations.AddField(
            model_name='timeoutaction',
            name='owner_group',
            field=models.ForeignKey(blank=True, db_constraint=False, db_index=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='shares.gridgroup'),
        ),
        migrations.RunSQL(FILL, migrations.RunSQL.noop),
        migrations.AddIndex(
            model_name='timeoutaction',
            index=models.Index(fields=['owner', '-at', '-id'], name='timeoutaction_owner_at'),
        ),
        migrations.AddIndex(
            model_name='timeoutaction',
            index=models.Index(fields=['owner_group', '-at', '-id'], name='timeoutaction_group_at'),
        ),
    ]
