from django.db import migrations

from tenants.rls import enable_rls


class Migration(migrations.Migration):
    dependencies = [("answers", "0001_initial")]

    operations = [
        enable_rls("answers_entityalias"),
        enable_rls("answers_authoritytier"),
        enable_rls("answers_authorityassignment"),
        enable_rls("answers_freshnessfeed"),
        enable_rls("answers_answersettings"),
    ]
