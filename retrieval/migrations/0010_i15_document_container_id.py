import django.db.models.fields.json
from django.db import migrations, models


class Migration(migrations.Migration):
    """An index on (source, metadata->>'container_id'): a permission sync finds the documents that carry a
    container's ACL (Confluence attachments of a page) in our own index instead of listing them at the source
    (issue 15, retrieval.actions.acl_update_targets)."""

    dependencies = [
        ("retrieval", "0009_i14_document_about"),
        ("tenants", "0006_i17_sso"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="document",
            index=models.Index(
                models.F("source"),
                django.db.models.fields.json.KeyTextTransform("container_id", "metadata"),
                name="document_container_id",
            ),
        ),
    ]
