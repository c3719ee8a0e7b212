"""Tenants, people, groups and external identities.

Authentication tables (Tenant, User, Membership, ApiToken) are read before a
tenant is known (a token or session names the tenant), so they carry no RLS;
they hold no source content.  Every table that holds tenant data inherits
``TenantScopedModel`` and is put under forced RLS by its migration.
"""

from __future__ import annotations

import hashlib
import secrets

from django.contrib.auth.models import AbstractUser
from django.db import models
from django.utils import timezone

from tenants.scoping import TenantScopedModel


class Tenant(models.Model):
    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return self.slug


class User(AbstractUser):
    # Only a verified address may map external identities to this user.
    email_verified = models.BooleanField(default=False)


class Membership(models.Model):
    class Role(models.TextChoices):
        MEMBER = "member"
        ADMIN = "admin"

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)
    created_at = models.DateTimeField(default=timezone.now)

    # SCIM provisioning (identity/scim.py): a membership is the tenant's SCIM User resource.  Deactivation is
    # per tenant (the User row is shared by every tenant the person belongs to): an inactive membership
    # authenticates nowhere and resolves no permissions.
    active = models.BooleanField(default=True)
    scim_user_name = models.CharField(max_length=300, blank=True, default="")
    scim_external_id = models.CharField(max_length=300, blank=True, default="")
    scim_resource = models.JSONField(default=dict, blank=True)  # the attributes the IdP sent, echoed back
    # OpenID Connect: the provider's stable subject, bound at the first verified sign-in (identity/sso.py).
    sso_subject = models.CharField(max_length=300, blank=True, default="")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "user"], name="uniq_membership"),
            models.UniqueConstraint(
                fields=["tenant", "scim_user_name"], condition=~models.Q(scim_user_name=""),
                name="uniq_membership_scim_user_name",
            ),
        ]  # fmt: skip

    @property
    def is_admin(self) -> bool:
        return self.role == self.Role.ADMIN


class ApiToken(models.Model):
    """A bearer token bound to one membership (so to exactly one tenant).

    Only a sha256 of the secret is stored; the clear token is shown once.
    """

    membership = models.ForeignKey(Membership, on_delete=models.CASCADE, related_name="tokens")
    name = models.CharField(max_length=100, default="api")
    prefix = models.CharField(max_length=16, db_index=True)
    key_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Scope(models.TextChoices):
        # read: search and answers only; admin: whatever the membership's role allows;
        # scim: the tenant's provisioning endpoint (/scim/v2) and nothing else.
        READ = "read"
        ADMIN = "admin"
        SCIM = "scim"

    # "admin" by default so tokens made before scopes existed keep the rights they had.
    scope = models.CharField(max_length=16, choices=Scope.choices, default=Scope.ADMIN)
    expires_at = models.DateTimeField(null=True, blank=True)

    @property
    def status(self) -> str:
        if self.revoked_at is not None:
            return "revoked"
        if self.expires_at is not None and self.expires_at <= timezone.now():
            return "expired"
        return "active"

    @staticmethod
    def hash_key(key: str) -> str:
        return hashlib.sha256(key.encode()).hexdigest()

    @classmethod
    def new_key(cls) -> tuple[str, str]:
        prefix = secrets.token_hex(4)
        return prefix, f"cairn_{prefix}_{secrets.token_urlsafe(32)}"


class Group(TenantScopedModel):
    """A group principal as synced from a source (or created by an admin)."""

    principal = models.CharField(max_length=300)
    display_name = models.CharField(max_length=300, blank=True)
    source_kind = models.CharField(max_length=32, blank=True)
    updated_at = models.DateTimeField(default=timezone.now)
    # SCIM-provisioned groups (source_kind "scim"): the IdP's externalId (Entra: the group's object id).
    scim_external_id = models.CharField(max_length=300, blank=True, default="")
    scim_resource = models.JSONField(default=dict, blank=True)  # other attributes the IdP sent, echoed back

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "principal"], name="uniq_group_principal")]


class GroupMember(TenantScopedModel):
    """``member_principal`` (an external user principal) belongs to ``group``."""

    group = models.ForeignKey(Group, on_delete=models.CASCADE, related_name="members")
    member_principal = models.CharField(max_length=300)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["group", "member_principal"], name="uniq_group_member")]
        indexes = [models.Index(fields=["tenant", "member_principal"])]


class ExternalIdentity(TenantScopedModel):
    """An account at a source.  It grants a user nothing until mapped to them,
    and mapping happens only by a verified e-mail match or by an admin."""

    class MappedBy(models.TextChoices):
        NONE = ""
        EMAIL = "verified_email"
        ADMIN = "admin"
        SSO = "sso"  # the tenant's identity provider asserted the object id at sign-in

    principal = models.CharField(max_length=300)  # e.g. "slack:user:U123"
    email = models.EmailField(blank=True)
    email_verified = models.BooleanField(default=False)
    display_name = models.CharField(max_length=300, blank=True)
    is_guest = models.BooleanField(default=False)
    is_bot = models.BooleanField(default=False)
    deactivated = models.BooleanField(default=False)
    user = models.ForeignKey(User, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    mapped_by = models.CharField(max_length=32, choices=MappedBy.choices, blank=True, default="")
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "principal"], name="uniq_identity_principal")]
        indexes = [models.Index(fields=["tenant", "user"])]


class AuditEvent(TenantScopedModel):
    """One append-only, hash-chained audit record (admin action or answer).

    ``seq`` numbers a tenant's records 1, 2, 3, ... without gaps; ``hash`` is
    sha256 over ``prev_hash`` and the canonical JSON of the row
    (``tenants.audit.canonical_payload``), so editing, deleting or reordering
    a row breaks the chain (``manage.py audit_verify``).  The app role holds
    no UPDATE/DELETE on the table and a trigger rejects both (migration 0003).
    Actor fields are plain values, not foreign keys: deleting a user must
    neither cascade into nor be blocked by the log.
    """

    class Kind(models.TextChoices):
        ADMIN = "admin"
        ANSWER = "answer"

    seq = models.BigIntegerField()
    created_at = models.DateTimeField()
    kind = models.CharField(max_length=16, choices=Kind.choices)
    action = models.CharField(max_length=100)
    actor_user_id = models.BigIntegerField(null=True)
    actor_username = models.CharField(max_length=150, blank=True)
    target_type = models.CharField(max_length=100, blank=True)
    target_id = models.CharField(max_length=200, blank=True)
    trace_id = models.CharField(max_length=64, blank=True, db_index=True)
    details = models.JSONField(default=dict)
    prev_hash = models.CharField(max_length=64)
    hash = models.CharField(max_length=64)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "seq"], name="uniq_audit_seq")]
        indexes = [models.Index(fields=["tenant", "created_at"]), models.Index(fields=["tenant", "action"])]


class Feedback(TenantScopedModel):
    """A user's flag on a claim or a source of an answer they received.

    Bound server-side to the audited answer (``trace_id``): the plan, the
    evidence ids and the claim's digest come from the audit row, so a client
    cannot attach feedback to an answer it never got or to evidence it never saw.
    """

    class Target(models.TextChoices):
        CLAIM = "claim"
        SOURCE = "source"

    class Verdict(models.TextChoices):
        WRONG = "wrong"
        UNSUPPORTED = "unsupported"
        STALE = "stale"

    user_id = models.BigIntegerField()
    trace_id = models.CharField(max_length=64, db_index=True)
    target = models.CharField(max_length=16, choices=Target.choices)
    verdict = models.CharField(max_length=16, choices=Verdict.choices)
    claim_id = models.CharField(max_length=64, blank=True)
    claim_text = models.TextField(blank=True)
    evidence_id = models.CharField(max_length=64, blank=True)
    document_id = models.BigIntegerField(null=True)
    question = models.TextField()
    plan = models.JSONField(default=dict)
    evidence_ids = models.JSONField(default=list)
    comment = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["tenant", "created_at"])]


class TenantSso(models.Model):
    """A tenant's OpenID Connect provider (Entra ID, Okta, Google, any conforming OP).

    Read before a tenant is known (the sign-in starts from the tenant's slug), so, like Tenant, no RLS;
    it holds no source content.  The client secret is Fernet-encrypted (core.crypto).
    """

    class Passwords(models.TextChoices):
        ALL = "all"  # local passwords for everyone (demo)
        ADMINS = "admins"  # break-glass: only tenant admins may still use a local password

    tenant = models.OneToOneField(Tenant, on_delete=models.CASCADE, related_name="sso")
    enabled = models.BooleanField(default=True)
    issuer = models.URLField(max_length=500)
    client_id = models.CharField(max_length=300)
    client_secret_encrypted = models.TextField(blank=True)
    allowed_email_domains = models.JSONField(default=list)
    # Entra ID: the directory (tenant) id every token's ``tid`` must equal; empty for other providers.
    entra_tenant_id = models.CharField(max_length=64, blank=True, default="")
    local_passwords = models.CharField(max_length=16, choices=Passwords.choices, default=Passwords.ALL)
    updated_at = models.DateTimeField(default=timezone.now)
