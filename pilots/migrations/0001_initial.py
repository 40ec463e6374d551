# Pilots, their history, credentials and the director's decisions, moved from matcher
# (matcher.0009_pilots_moved_to_pilots): state only, on the same tables, as matcher.0004 and
# matcher.0008 left them.

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('matcher', '0008_pilots_per_credential_and_job_pilot'),
        ('shares', '0003_gridgroup_production_management'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='DirectorDecision',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('cycle_run', models.BigIntegerField(db_index=True)),
                        ('at', models.DateTimeField()),
                        ('task_queue_id', models.BigIntegerField()),
                        ('priority', models.FloatField()),
                        ('jobs', models.IntegerField()),
                        ('cpu_time', models.IntegerField()),
                        ('lam', models.FloatField(verbose_name='λ')),
                        ('drawn', models.IntegerField()),
                        ('cap', models.IntegerField()),
                        ('waiting_pilots', models.IntegerField()),
                        ('submitted', models.IntegerField(default=0)),
                        ('submit_pool', models.CharField(blank=True, max_length=64)),
                        ('private', models.BooleanField(default=False)),
                        ('skipped', models.CharField(blank=True, max_length=255)),
                    ],
                    options={
                        'db_table': 'matcher_directordecision',
                        'ordering': ['-cycle_run', '-submitted', 'task_queue_id'],
                    },
                ),
                migrations.CreateModel(
                    name='Pilot',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('reference', models.CharField(max_length=255)),
                        ('task_queue_id', models.BigIntegerField(db_index=True)),
                        ('owner_dn', models.CharField(max_length=255)),
                        ('owner_group', models.CharField(max_length=64)),
                        ('private', models.BooleanField(default=False)),
                        ('broker', models.CharField(blank=True, max_length=128)),
                        ('grid_type', models.CharField(blank=True, max_length=32)),
                        ('submit_pool', models.CharField(max_length=64)),
                        ('requirements', models.TextField(blank=True, help_text='the pilot JDL')),
                        ('site', models.CharField(blank=True, max_length=128)),
                        ('ce', models.CharField(blank=True, max_length=128, verbose_name='CE')),
                        ('status', models.CharField(choices=[('Submitted', 'Submitted'), ('Ready', 'Ready'), ('Scheduled', 'Scheduled'), ('Waiting', 'Waiting'), ('Running', 'Running'), ('Done', 'Done'), ('Failed', 'Failed'), ('Aborted', 'Aborted')], max_length=16)),
                        ('submitted', models.DateTimeField()),
                        ('status_changed', models.DateTimeField()),
                        ('next_event', models.DateTimeField(blank=True, null=True)),
                        ('director_run', models.BigIntegerField(blank=True, help_text='CycleRun id', null=True)),
                        ('jobs_done', models.PositiveIntegerField(default=0)),
                        ('credential_user', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        'db_table': 'matcher_pilot',
                        'ordering': ['-submitted', '-id'],
                    },
                ),
                migrations.CreateModel(
                    name='PilotStatusHistory',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('at', models.DateTimeField()),
                        ('from_status', models.CharField(blank=True, max_length=16)),
                        ('to_status', models.CharField(max_length=16)),
                        ('reason', models.CharField(blank=True, max_length=255)),
                        ('pilot', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='history', to='pilots.pilot')),
                    ],
                    options={
                        'db_table': 'matcher_pilotstatushistory',
                        'ordering': ['at', 'id'],
                    },
                ),
                migrations.CreateModel(
                    name='Credential',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('dn', models.CharField(max_length=255, verbose_name='DN')),
                        ('expires', models.DateTimeField()),
                        ('group', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='credentials', to='shares.gridgroup')),
                    ],
                    options={
                        'db_table': 'matcher_credential',
                        'constraints': [models.UniqueConstraint(fields=('dn', 'group'), name='credential_dn_group_unique')],
                    },
                ),
                migrations.AddIndex(
                    model_name='pilot',
                    index=models.Index(fields=['task_queue_id', 'status', 'submitted'], name='pilot_tq_status'),
                ),
                migrations.AddIndex(
                    model_name='pilot',
                    index=models.Index(fields=['status', 'next_event'], name='pilot_status_next'),
                ),
                migrations.AddConstraint(
                    model_name='pilot',
                    constraint=models.UniqueConstraint(fields=('credential_user', 'reference'), name='pilot_credential_reference_unique'),
                ),
            ],
            database_operations=[],
        ),
    ]
