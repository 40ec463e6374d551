# TimeoutAction, moved from brokerage (brokerage.0009_timeoutaction_moved_to_timeouts): state
# only, the model as brokerage.0004_timeoutaction created it, on the same table.

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('brokerage', '0009_timeoutaction_moved_to_timeouts'),
        ('matcher', '0008_pilots_per_credential_and_job_pilot'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='TimeoutAction',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('cycle_run', models.BigIntegerField(blank=True, help_text='CycleRun id', null=True)),
                        ('at', models.DateTimeField()),
                        ('rule', models.CharField(max_length=32)),
                        ('from_status', models.CharField(max_length=16)),
                        ('to_status', models.CharField(max_length=16)),
                        ('queue', models.CharField(blank=True, max_length=128)),
                        ('reason', models.CharField(blank=True, max_length=255)),
                        ('job', models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='matcher.job')),
                    ],
                    options={
                        'db_table': 'brokerage_timeoutaction',
                        'ordering': ['-at', '-id'],
                        'indexes': [models.Index(fields=['-at'], name='timeoutaction_at'), models.Index(fields=['rule', '-at'], name='timeoutaction_rule_at')],
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
