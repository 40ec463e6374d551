# The tables kept matcher's names when the models moved here; they take pilots' names now, rows,
# ids and their sequences kept (a rename).

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('pilots', '0002_content_types_follow_the_models'),
    ]

    operations = [
        migrations.AlterModelTable(name='credential', table=None),
        migrations.AlterModelTable(name='pilot', table=None),
        migrations.AlterModelTable(name='pilotstatushistory', table=None),
        migrations.AlterModelTable(name='directordecision', table=None),
    ]
