from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("tenants", "0003_audit_feedback")]

    operations = [
        migrations.AddField(
            model_name="apitoken",
            name="scope",
            field=models.CharField(
                choices=[("read", "Read"), ("admin", "Admin"), ("scim", "Scim")], default="admin", max_length=16
            ),
        ),
        migrations.AddField(
            model_name="apitoken",
            name="expires_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
