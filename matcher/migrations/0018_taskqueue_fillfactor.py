"""Room on each page of the TaskQueue table (fillfactor 50): the priorities cycle rewrites
thousands of TaskQueue priorities a run, and with room beside each row PostgreSQL writes the new
row version on the same page without touching the indexes (a HOT update). Measured at 50,000
TaskQueues: a warm cycle 1.25 s against 1.74 s (bench/priorities.py --fillfactor 50). The table
has a row per TaskQueue, so the room costs little. Only new pages and row versions use it: no
rewrite, no long lock."""

from django.db import migrations

TABLE = "matcher_taskqueue"


class Migration(migrations.Migration):
    dependencies = [("matcher", "0017_job_name_trigram")]

    operations = [
        migrations.RunSQL(
            f"ALTER TABLE {TABLE} SET (fillfactor = 50)",
            f"ALTER TABLE {TABLE} RESET (fillfactor)",
        )
    ]
