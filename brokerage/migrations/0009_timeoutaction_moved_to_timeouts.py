# TimeoutAction moved to the timeouts app: it leaves brokerage's state only. The table
# (brokerage_timeoutaction) and its rows stay where they are; timeouts.0001_initial takes them.

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('brokerage', '0008_task_setup_default_setup'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name='TimeoutAction'),
            ],
            database_operations=[],
        ),
    ]
