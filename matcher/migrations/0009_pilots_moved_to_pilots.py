# Pilots, their history, credentials and the director's decisions moved to the pilots app: they
# leave matcher's state only. Their tables (matcher_pilot, matcher_pilotstatushistory,
# matcher_credential, matcher_directordecision) and rows stay; pilots.0001_initial takes them, and
# Job.pilot now points at pilots.Pilot (no database constraint, as before: nothing to alter).

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('matcher', '0008_pilots_per_credential_and_job_pilot'),
        ('pilots', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name='job',
                    name='pilot',
                    field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='claimed_jobs', to='pilots.pilot'),
                ),
                migrations.DeleteModel(name='PilotStatusHistory'),
                migrations.DeleteModel(name='DirectorDecision'),
                migrations.DeleteModel(name='Pilot'),
                migrations.DeleteModel(name='Credential'),
            ],
            database_operations=[],
        ),
    ]
