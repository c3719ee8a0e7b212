from django.db import migrations, models


class Migration(migrations.Migration):
    """Document.about: the entity and reporting period a document describes (issue 14)."""

    dependencies = [("retrieval", "0008_posting_key_with_acl")]

    operations = [
        migrations.AddField(model_name="document", name="about", field=models.JSONField(blank=True, default=dict)),
    ]
