"""Issue 19: the clustered exact scan of the vector leg for broad readers.

``retrieval_chunk.vcluster`` (the chunk's nearest centroid of its tenant's clustering, NULL until the
tenant has one), the per-tenant ``VectorClustering`` state and ``VectorCentroid`` rows (forced RLS, as every
tenant table), and the covering btree ``(tenant_id, vcluster, acl_set_id_denorm) INCLUDE (id,
embedding_half)``: the probed clusters' readable rows are adjacent in it, so the scan is index-only
(docs/vector-benchmark.md, "Clustered exact scan").  Adding the nullable column rewrites nothing; the index
build reads the table once (a 1M-row tenant's index is about 870 MB).
"""

import django.db.models.deletion
import django.db.models.manager
import pgvector.django.vector
from django.db import migrations, models

from tenants.rls import enable_rls


class Migration(migrations.Migration):

    dependencies = [
        ('retrieval', '0010_i15_document_container_id'),
        ('tenants', '0006_i17_sso'),
    ]

    operations = [
        migrations.AddField(
            model_name='chunk',
            name='vcluster',
            field=models.IntegerField(blank=True, null=True),
        ),
        migrations.CreateModel(
            name='VectorCentroid',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('cluster', models.IntegerField()),
                ('centroid', pgvector.django.vector.VectorField(dimensions=384)),
                ('tenant', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='tenants.tenant')),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('tenant', 'cluster'), name='uniq_vectorcentroid_cluster')],
            },
            managers=[
                ('objects', django.db.models.manager.Manager()),
                ('unscoped_across_tenants', django.db.models.manager.Manager()),
            ],
        ),
        migrations.CreateModel(
            name='VectorClustering',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('generation', models.BigIntegerField(default=0)),
                ('nlist', models.IntegerField(default=0)),
                ('trained_chunks', models.BigIntegerField(default=0)),
                ('state', models.CharField(choices=[('reassigning', 'Reassigning'), ('ready', 'Ready')], default='reassigning', max_length=16)),
                ('trained_at', models.DateTimeField(blank=True, null=True)),
                ('train_seconds', models.FloatField(default=0.0)),
                ('ready_at', models.DateTimeField(blank=True, null=True)),
                ('acl_counts', models.JSONField(blank=True, default=dict)),
                ('tenant', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='tenants.tenant')),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('tenant',), name='uniq_vectorclustering_tenant')],
            },
            managers=[
                ('objects', django.db.models.manager.Manager()),
                ('unscoped_across_tenants', django.db.models.manager.Manager()),
            ],
        ),
        enable_rls("retrieval_vectorclustering"),
        enable_rls("retrieval_vectorcentroid"),
        migrations.RunSQL(
            "CREATE INDEX chunk_tenant_vcluster_half ON retrieval_chunk (tenant_id, vcluster, acl_set_id_denorm) "
            "INCLUDE (id, embedding_half)",
            reverse_sql="DROP INDEX IF EXISTS chunk_tenant_vcluster_half",
        ),
    ]
