# The table kept brokerage's name when the model moved here; it takes timeouts' name now, rows,
# ids and its sequence kept (a rename).

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('timeouts', '0002_content_type_moved_from_brokerage'),
    ]

    operations = [
        migrations.AlterModelTable(name='timeoutaction', table=None),
    ]
