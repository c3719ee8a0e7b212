"""Console-side domain functions that the answer engine's admin module does not provide (yet).

``do_reorder_authority_tiers`` renumbers the tenant's tiers in the order given and re-tiers the
indexed documents through ``answers.actions.do_assign_authority`` (the one place that updates
documents, chunks and the index version), so ranking and "official only" agree at once.
"""

from __future__ import annotations

from django.db import transaction
from django.db.models import Max

from answers.actions import do_assign_authority, do_define_tier, retier
from answers.models import AuthorityAssignment, AuthorityTier
from connectors.actions import AUTHORITY_TIERS
from connectors.models import ConnectorInstance
from retrieval.models import Source
from tenants.audit import Actor, do_record_audit_event


def do_add_authority_tier(name: str, *, actor: Actor) -> AuthorityTier:
    """A new tier below the existing ones (audited by ``do_define_tier``)."""
    top = AuthorityTier.objects.aggregate(m=Max("rank"))["m"]
    if AuthorityTier.objects.filter(name=name.strip()).exists():
        raise ValueError("A tier with that name exists.")
    return do_define_tier(0 if top is None else top + 1, name, actor=actor)


@transaction.atomic
def do_reorder_authority_tiers(ordered_ids: list[int], *, actor: Actor) -> list[AuthorityTier]:
    tiers = {t.pk: t for t in AuthorityTier.objects.select_for_update()}
    if sorted(ordered_ids) != sorted(tiers):
        raise ValueError("The new order must list every tier exactly once.")
    # Two passes: ranks are unique per tenant, so park them out of the way first.
    for i, pk in enumerate(ordered_ids):
        AuthorityTier.objects.filter(pk=pk).update(rank=-(i + 1))
    for i, pk in enumerate(ordered_ids):
        AuthorityTier.objects.filter(pk=pk).update(rank=i)
    # Whole-source assignments first, container overrides after (do_assign_authority skips overridden ones).
    for a in AuthorityAssignment.objects.select_related("source", "tier").order_by("container"):
        a.tier.refresh_from_db()
        do_assign_authority(a.source, a.tier, a.container, actor=None)  # recorded once, below
    do_record_audit_event(actor=actor, action="hierarchy.tiers_reordered", target_type="authority_tier",
                          target_id="", details={"order": ordered_ids})  # fmt: skip
    return list(AuthorityTier.objects.order_by("rank"))


def source_default_rank(source: Source) -> int:
    """The tier a source starts in: its connector kind's (``connectors.actions.AUTHORITY_TIERS``), else wiki."""
    if ConnectorInstance.objects.filter(source=source).exists():
        return AUTHORITY_TIERS.get(source.kind, 2)
    return 2


@transaction.atomic
def do_remove_authority_assignment(assignment_id: int, *, actor: Actor) -> AuthorityAssignment | None:
    """Take a source (or one container) out of its assigned tier; its documents fall back at once.

    A container falls back to its source's tier; a whole source to the tier it was created in
    (``source_default_rank``), as if it had never been assigned.
    Container assignments of the source stay where they are.
    """
    row = AuthorityAssignment.objects.select_related("source", "tier").select_for_update().filter(
        pk=assignment_id).first()  # fmt: skip
    if row is None:
        return None
    source = row.source
    row.delete()
    if row.container:
        source.refresh_from_db(fields=["authority_tier"])
        rank = source.authority_tier
    else:
        rank = source_default_rank(source)
    retier(source, row.container, rank)
    do_record_audit_event(actor=actor, action="hierarchy.unassigned", target_type="source", target_id=source.pk,
                          details={"container": row.container, "tier": row.tier.name, "rank": row.tier.rank,
                                   "falls_back_to_rank": rank})  # fmt: skip
    return row
