from django.db import migrations

from tenants.rls import enable_rls


class Migration(migrations.Migration):
    dependencies = [("tenants", "0001_initial")]

    operations = [
        enable_rls("tenants_group"),
        enable_rls("tenants_groupmember"),
        enable_rls("tenants_externalidentity"),
    ]
