# Issue 16: operator trust (allow_private_network) binds to the exact origins the operator approved.
# Existing rows get no origins: their trust lapses until the operator approves again (fail closed).
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("connectors", "0002_rls")]

    operations = [
        migrations.AddField(
            model_name="connectorinstance",
            name="private_network_origins",
            field=models.JSONField(blank=True, default=list),
        ),
    ]
