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

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "user"], name="uniq_membership")]

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
