import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("tenants", "0005_i17_scim")]

    operations = [
        migrations.AddField(
            model_name="membership", name="sso_subject", field=models.CharField(blank=True, default="", max_length=300)
        ),
        migrations.AlterField(
            model_name="externalidentity",
            name="mapped_by",
            field=models.CharField(
                blank=True,
                choices=[("", "None"), ("verified_email", "Email"), ("admin", "Admin"), ("sso", "Sso")],
                default="",
                max_length=32,
            ),
        ),
        migrations.CreateModel(
            name="TenantSso",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("enabled", models.BooleanField(default=True)),
                ("issuer", models.URLField(max_length=500)),
                ("client_id", models.CharField(max_length=300)),
                ("client_secret_encrypted", models.TextField(blank=True)),
                ("allowed_email_domains", models.JSONField(default=list)),
                ("entra_tenant_id", models.CharField(blank=True, default="", max_length=64)),
                (
                    "local_passwords",
                    models.CharField(choices=[("all", "All"), ("admins", "Admins")], default="all", max_length=16),
                ),
                ("updated_at", models.DateTimeField(default=django.utils.timezone.now)),
                (
                    "tenant",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE, related_name="sso", to="tenants.tenant"
                    ),
                ),
            ],
        ),
    ]
