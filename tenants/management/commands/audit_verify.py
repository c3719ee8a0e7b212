"""``manage.py audit_verify [--tenant SLUG]``: recompute every tenant's audit hash chain.

Exits 1 (and names the first broken row) if any chain was tampered with.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from tenants.audit import verify_chain
from tenants.context import tenant_context
from tenants.models import Tenant


class Command(BaseCommand):
    help = "Verify the hash chain of the audit log (all tenants, or one)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", help="tenant slug (default: every tenant)")

    def handle(self, *args: Any, **options: Any) -> None:
        tenants = Tenant.objects.order_by("pk")
        if options.get("tenant"):
            tenants = tenants.filter(slug=options["tenant"])
            if not tenants.exists():
                raise CommandError(f"no tenant {options['tenant']!r}")
        broken = 0
        for tenant in tenants:
            with tenant_context(tenant.pk):
                report = verify_chain()
            if report.ok:
                self.stdout.write(f"{tenant.slug}: ok ({report.checked} rows)")
            else:
                broken += 1
                self.stdout.write(f"{tenant.slug}: TAMPERED at seq {report.first_bad_seq}: {report.problem}")
        if broken:
            raise CommandError(f"{broken} tenant audit chain(s) failed verification")
