from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("tenants", "0004_i17_token_scope")]

    operations = [
        migrations.AddField(model_name="membership", name="active", field=models.BooleanField(default=True)),
        migrations.AddField(
            model_name="membership", name="scim_user_name",
            field=models.CharField(blank=True, default="", max_length=300),
        ),
        migrations.AddField(
            model_name="membership", name="scim_external_id",
            field=models.CharField(blank=True, default="", max_length=300),
        ),
        migrations.AddField(
            model_name="membership", name="scim_resource", field=models.JSONField(blank=True, default=dict)
        ),
        migrations.AddConstraint(
            model_name="membership",
            constraint=models.UniqueConstraint(
                condition=models.Q(("scim_user_name", ""), _negated=True),
                fields=("tenant", "scim_user_name"),
                name="uniq_membership_scim_user_name",
            ),
        ),
        migrations.AddField(
            model_name="group", name="scim_external_id",
            field=models.CharField(blank=True, default="", max_length=300),
        ),
        migrations.AddField(model_name="group", name="scim_resource", field=models.JSONField(blank=True, default=dict)),
    ]  # fmt: skip
