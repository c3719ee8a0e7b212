"""SCIM 2.0 provisioning (RFC 7643 resources, RFC 7644 protocol) at /scim/v2, for Entra ID and Okta.

The tenant comes from the bearer token only: a tenant admin issues a token of scope ``scim``
(console, "API tokens"), the identity provider presents it, and every request runs inside that
tenant's context.  Payloads are parsed, validated, patched, filtered and serialised by scim2-models;
this module maps the resources onto our tables:

- a SCIM User is a ``Membership`` of the tenant (id = the membership's id).  ``active: false``
  deactivates the membership in this tenant only (the User row may belong to other tenants too):
  its sessions end on their next request, its API tokens are revoked at once, and its permission
  sets stop resolving (``retrieval.permissions.user_principals``; the ACL version is bumped so no
  cached permission context outlives the change).
- a SCIM Group is a ``tenants.Group`` with source_kind "scim"; its members are stored as the
  principal ``scim:user:<membership id>``, which every active member of the tenant holds.

Every change writes an audit row (actor: the admin who issued the token, details.via "scim").
Lists are filtered in Python over the tenant's resources with scim2-models' filter evaluation,
which is fine for thousands of people, not for millions.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.db import IntegrityError, transaction
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from pydantic import ValidationError
from rest_framework import authentication
from scim2_models import (
    Context,
    Error,
    ListResponse,
    PatchOp,
    ResourceType,
    ResponseParameters,
    Schema,
    SCIMException,
    ScimFilter,
    ScimPolicy,
    ServiceProviderConfig,
)
from scim2_models import Group as ScimGroup
from scim2_models import User as ScimUser

from retrieval.permissions import bump_acl_version
from tenants.audit import do_record_audit_event
from tenants.auth import TokenRejected, find_live_token, touch_token
from tenants.context import require_tenant_id, tenant_context
from tenants.models import ApiToken, Group, GroupMember, Membership, User
from tenants.tokens import revoke_all_tokens_of

SCIM_CONTENT_TYPE = "application/scim+json"
MAX_BODY_BYTES = 256 * 1024
MAX_PAGE = 200
# Entra ID's documented PATCH habits: "remove" with a value naming what to remove, and a path filter
# for an entry that does not exist yet ("emails[type eq \"work\"].value"), plus attributes it sends
# that we do not model (kept out, not refused).
# https://learn.microsoft.com/en-us/entra/identity/app-provisioning/use-scim-to-provision-users-and-groups
POLICY = ScimPolicy(
    unknown=ScimPolicy.Unknown.ignore,
    remove_value_as_filter=ScimPolicy.RemoveValue.apply,
    unmatched_path_filter=ScimPolicy.UnmatchedPathFilter.create,
)

View = Callable[..., HttpResponse]


class ScimFailure(Exception):
    def __init__(self, status: int, detail: str, scim_type: str | None = None) -> None:
        super().__init__(detail)
        self.status, self.detail, self.scim_type = status, detail, scim_type


def _respond(payload: dict[str, Any] | None, status: int = 200, location: str = "") -> HttpResponse:
    body = b"" if payload is None else json.dumps(payload).encode()
    response = HttpResponse(body, status=status, content_type=SCIM_CONTENT_TYPE)
    if location:
        response["Location"] = location
    return response


def _error(status: int, detail: str, scim_type: str | None = None) -> HttpResponse:
    err = Error(status=status, detail=detail, scim_type=scim_type)
    return _respond(err.model_dump(), status)


def _token_membership(request: HttpRequest) -> Membership | None:
    header = authentication.get_authorization_header(request).split()
    if len(header) != 2 or header[0].lower() != b"bearer":
        return None
    try:
        token = find_live_token(header[1].decode())
    except (UnicodeError, TokenRejected):
        return None
    if token is None or token.scope != ApiToken.Scope.SCIM or not token.membership.is_admin:
        return None
    touch_token(token)
    return token.membership


def scim_view(fn: View) -> View:
    """Bearer token of scope scim -> the issuing admin's membership -> tenant context; SCIM errors."""

    @csrf_exempt  # a bearer-token protocol endpoint: no cookie authenticates here
    @wraps(fn)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        actor = _token_membership(request)
        if actor is None:
            response = _error(401, "A valid SCIM bearer token is required.")
            response["WWW-Authenticate"] = 'Bearer realm="scim"'
            return response
        try:
            with tenant_context(actor.tenant_id):
                return fn(request, actor, *args, **kwargs)
        except ScimFailure as exc:
            return _error(exc.status, exc.detail, exc.scim_type)
        except SCIMException as exc:
            err = exc.to_error()
            return _respond(err.model_dump(), err.status or 400)
        except ValidationError as exc:
            first = Error.from_validation_errors(exc)[0]
            return _respond(first.model_dump(), first.status or 400)

    return wrapper


def _body(request: HttpRequest) -> dict[str, Any]:
    if len(request.body) > MAX_BODY_BYTES:
        raise ScimFailure(413, "The request body is too large.", None)
    try:
        data = json.loads(request.body or b"null")
    except ValueError:
        raise ScimFailure(400, "The body is not JSON.", "invalidSyntax") from None
    if not isinstance(data, dict):
        raise ScimFailure(400, "The body must be a JSON object.", "invalidSyntax")
    return data


def _base(request: HttpRequest) -> str:
    return request.build_absolute_uri(reverse("scim-users"))[: -len("Users")]


def _audit(actor: Membership, action: str, target_type: str, target_id: object, details: dict[str, Any]) -> None:
    do_record_audit_event(actor=actor.user, action=action, target_type=target_type, target_id=str(target_id),
                          details={"via": "scim", **details})  # fmt: skip


def _response_parameters(request: HttpRequest, model: type[Any]) -> ResponseParameters[Any] | None:
    attributes = request.GET.get("attributes") or None
    excluded = request.GET.get("excludedAttributes") or None
    if not attributes and not excluded:
        return None
    return ResponseParameters[model].model_validate(  # type: ignore[index,no-any-return,valid-type]
        {"attributes": attributes, "excludedAttributes": excluded}
    )


# ---------------------------------------------------------------------------------------------- users


def _user_name(m: Membership) -> str:
    return m.scim_user_name or m.user.username


def _user_resource(m: Membership, base: str) -> ScimUser:
    data = dict(m.scim_resource or {})
    if not data.get("emails") and m.user.email:
        data["emails"] = [{"value": m.user.email, "primary": True, "type": "work"}]
    if not data.get("name") and (m.user.first_name or m.user.last_name):
        data["name"] = {"givenName": m.user.first_name or None, "familyName": m.user.last_name or None}
    groups = Group.objects.filter(source_kind="scim", members__member_principal=f"scim:user:{m.pk}")
    # An IdP that removed "active" sees it absent; the membership keeps its state (removal is not consent).
    active_unset = data.pop("_active_unset", False)
    data.update(
        schemas=["urn:ietf:params:scim:schemas:core:2.0:User"],
        id=str(m.pk),
        userName=_user_name(m),
        active=None if active_unset else m.active,
        externalId=m.scim_external_id or None,
        groups=[{"value": str(g.pk), "display": g.display_name, "$ref": f"{base}Groups/{g.pk}", "type": "direct"}
                for g in groups.order_by("pk")] or None,
        meta={"resourceType": "User", "created": m.created_at.isoformat(),
              "lastModified": data.pop("_last_modified", m.created_at.isoformat()), "location": f"{base}Users/{m.pk}"},
    )  # fmt: skip
    return ScimUser.model_validate(data)


def _dump(resource: Any, request: HttpRequest, model: type[Any]) -> dict[str, Any]:
    dumped: dict[str, Any] = resource.model_dump(
        scim_ctx=Context.RESOURCE_QUERY_RESPONSE, response_parameters=_response_parameters(request, model)
    )
    return dumped


def _tenant_memberships() -> Any:

    return Membership.objects.filter(tenant_id=require_tenant_id()).select_related("user")


def _find_user(pk: str) -> Membership:
    m = _tenant_memberships().filter(pk=int(pk)).first() if pk.isdigit() else None
    if m is None:
        raise ScimFailure(404, f"User {pk} not found.")
    return m


def _user_name_taken(name: str, *, except_pk: int | None = None) -> bool:
    qs = _tenant_memberships().exclude(pk=except_pk) if except_pk else _tenant_memberships()
    return (
        qs.filter(scim_user_name__iexact=name).exists()
        or qs.filter(scim_user_name="", user__username__iexact=name).exists()
    )


def _primary_email(resource: ScimUser) -> str:
    emails = resource.emails or []
    chosen = next((e for e in emails if e.primary), emails[0] if emails else None)
    return (str(chosen.value or "") if chosen else "").strip().lower()[:254]


def _store_user(m: Membership, resource: ScimUser) -> list[str]:
    """Write a validated User resource onto the membership and its User row; the changed fields."""
    changed: list[str] = []
    user_name = (resource.user_name or "").strip()
    if not user_name:
        raise ScimFailure(400, "userName is required.", "invalidValue")
    if _user_name_taken(user_name, except_pk=m.pk):
        raise ScimFailure(409, f"userName {user_name!r} is already in use.", "uniqueness")
    stored = resource.model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE)
    for key in ("id", "meta", "groups", "schemas", "userName", "active", "externalId", "password"):
        stored.pop(key, None)  # kept in columns, computed, or (password) never kept at all
    stored["_last_modified"] = timezone.now().isoformat()
    if resource.active is None and m.pk is not None and m.scim_resource:
        # "active" removed by PATCH (or left out of a PUT): the state does not change.
        stored["_active_unset"] = True
        active = m.active
    else:
        active = resource.active if resource.active is not None else True
    if m.active != active:
        changed.append("active")
    m.scim_user_name, m.scim_external_id, m.scim_resource, m.active = (
        user_name[:300], (resource.external_id or "")[:300], stored, active)  # fmt: skip
    m.save(update_fields=["scim_user_name", "scim_external_id", "scim_resource", "active"])
    user = m.user
    email = _primary_email(resource)
    given = (resource.name.given_name if resource.name else None) or ""
    family = (resource.name.family_name if resource.name else None) or ""
    # The tenant's directory vouches for the address (it is what maps source identities to this person).
    if (user.email, user.first_name, user.last_name) != (email, given[:150], family[:150]):
        user.email, user.first_name, user.last_name, user.email_verified = email, given[:150], family[:150], True
        user.save(update_fields=["email", "first_name", "last_name", "email_verified"])
        changed.append("profile")
    if "active" in changed and not active:
        _deprovision(m)
    return changed


def _deprovision(m: Membership) -> None:
    """Deactivation takes effect now: tokens revoked, cached permissions invalidated."""
    revoke_all_tokens_of(m.user)
    bump_acl_version()


def _internal_username(user_name: str) -> str:
    # User rows are shared across tenants: another tenant's directory may hold the same userName.
    base = user_name[:150]
    if not User.objects.filter(username__iexact=base).exists():
        return base
    return f"{user_name[:120]}~{secrets.token_hex(6)}"


@scim_view
def users(request: HttpRequest, actor: Membership) -> HttpResponse:
    if request.method == "GET":
        return _list(request, ScimUser, [_user_resource(m, _base(request)) for m in _tenant_memberships()
                                         .order_by("pk")])  # fmt: skip
    if request.method != "POST":
        raise ScimFailure(405, "GET or POST.")
    resource: ScimUser = ScimUser.model_validate(
        _body(request), scim_ctx=Context.RESOURCE_CREATION_REQUEST, scim_policy=POLICY
    )
    user_name = (resource.user_name or "").strip()
    if not user_name:
        raise ScimFailure(400, "userName is required.", "invalidValue")
    if _user_name_taken(user_name):
        raise ScimFailure(409, f"userName {user_name!r} is already in use.", "uniqueness")
    try:
        with transaction.atomic():
            user = User.objects.create(username=_internal_username(user_name), email_verified=True)
            user.set_unusable_password()  # SCIM people sign in with the tenant's identity provider
            user.save(update_fields=["password"])
            m = Membership.objects.create(tenant_id=actor.tenant_id, user=user, role=Membership.Role.MEMBER)
            _store_user(m, resource)
            _audit(actor, "scim.user_created", "membership", m.pk, {"userName": user_name})
    except IntegrityError:
        raise ScimFailure(409, f"userName {user_name!r} is already in use.", "uniqueness") from None
    m.refresh_from_db()
    out = _user_resource(m, _base(request))
    return _respond(_dump(out, request, ScimUser), 201, location=f"{_base(request)}Users/{m.pk}")


@scim_view
def user_detail(request: HttpRequest, actor: Membership, pk: str) -> HttpResponse:
    m = _find_user(pk)
    base = _base(request)
    if request.method == "GET":
        return _respond(_dump(_user_resource(m, base), request, ScimUser))
    if request.method == "DELETE":
        with transaction.atomic():
            user = m.user
            revoke_all_tokens_of(user)
            GroupMember.objects.filter(member_principal=f"scim:user:{m.pk}").delete()
            m.delete()
            if not Membership.objects.filter(user=user).exists():
                User.objects.filter(pk=user.pk).update(is_active=False)
            bump_acl_version()
            _audit(actor, "scim.user_deleted", "membership", pk, {"userName": _user_name(m)})
        return _respond(None, 204)
    resource: ScimUser
    if request.method == "PUT":
        resource = ScimUser.model_validate(_body(request), scim_ctx=Context.RESOURCE_REPLACEMENT_REQUEST,
                                           scim_policy=POLICY)  # fmt: skip
    elif request.method == "PATCH":
        patch = PatchOp[ScimUser].model_validate(_body(request), scim_ctx=Context.RESOURCE_PATCH_REQUEST,
                                                 scim_policy=POLICY)  # fmt: skip
        resource = _user_resource(m, base)
        patch.patch(resource, scim_policy=POLICY)
    else:
        raise ScimFailure(405, "GET, PUT, PATCH or DELETE.")
    with transaction.atomic():
        m = Membership.objects.select_for_update().select_related("user").get(pk=m.pk)
        was_active = m.active
        changed = _store_user(m, resource)
        action = "scim.user_deactivated" if was_active and not m.active else "scim.user_updated"
        _audit(actor, action, "membership", m.pk, {"userName": m.scim_user_name, "changed": changed})
    return _respond(_dump(_user_resource(m, base), request, ScimUser))


# --------------------------------------------------------------------------------------------- groups


def _group_resource(g: Group, base: str) -> ScimGroup:
    ids = [p.removeprefix("scim:user:") for p in g.members.values_list("member_principal", flat=True)
           if p.startswith("scim:user:")]  # fmt: skip
    names = {str(m.pk): _user_name(m) for m in _tenant_memberships().filter(pk__in=[int(i) for i in ids])}
    extra = dict(g.scim_resource or {})
    displays: dict[str, str] = extra.pop("_member_displays", {})
    data = {
        **extra,
        "schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"],
        "id": str(g.pk),
        "displayName": g.display_name,
        "externalId": g.scim_external_id or None,
        "members": [{"value": i, "$ref": f"{base}Users/{i}", "type": "User",
                     "display": displays.get(i, names[i])} for i in sorted(names, key=int)] or None,
        "meta": {"resourceType": "Group", "created": g.updated_at.isoformat(),
                 "lastModified": g.updated_at.isoformat(), "location": f"{base}Groups/{g.pk}"},
    }  # fmt: skip
    return ScimGroup.model_validate(data)


def _find_group(pk: str) -> Group:
    g = Group.objects.filter(pk=int(pk), source_kind="scim").first() if pk.isdigit() else None
    if g is None:
        raise ScimFailure(404, f"Group {pk} not found.")
    return g


def _store_group(g: Group, resource: ScimGroup) -> None:
    name = (resource.display_name or "").strip()
    if not name:
        raise ScimFailure(400, "displayName is required.", "invalidValue")
    member_ids = {str(m.value) for m in resource.members or [] if m.value}
    known = set(_tenant_memberships().filter(pk__in=[int(i) for i in member_ids if i.isdigit()])
                .values_list("pk", flat=True))  # fmt: skip
    unknown = member_ids - {str(k) for k in known}
    if unknown:
        raise ScimFailure(400, f"Unknown members: {', '.join(sorted(unknown))}.", "invalidValue")
    stored = resource.model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE)
    for key in ("id", "meta", "members", "schemas", "displayName", "externalId"):
        stored.pop(key, None)
    # The display names the IdP gave its members (echoed back as sent; our own name otherwise).
    stored["_member_displays"] = {str(m.value): m.display for m in resource.members or [] if m.value and m.display}
    g.display_name, g.scim_external_id, g.updated_at = name[:300], (resource.external_id or "")[:300], timezone.now()
    g.scim_resource = stored
    g.save()
    wanted = {f"scim:user:{k}" for k in known}
    GroupMember.objects.filter(group=g).exclude(member_principal__in=wanted).delete()
    have = set(GroupMember.objects.filter(group=g).values_list("member_principal", flat=True))
    GroupMember.objects.bulk_create([GroupMember(tenant_id=g.tenant_id, group=g, member_principal=p)
                                     for p in sorted(wanted - have)])  # fmt: skip
    bump_acl_version()  # group membership decides what people may read


@scim_view
def groups(request: HttpRequest, actor: Membership) -> HttpResponse:
    base = _base(request)
    if request.method == "GET":
        return _list(request, ScimGroup, [_group_resource(g, base) for g in
                                          Group.objects.filter(source_kind="scim").order_by("pk")])  # fmt: skip
    if request.method != "POST":
        raise ScimFailure(405, "GET or POST.")
    resource = ScimGroup.model_validate(_body(request), scim_ctx=Context.RESOURCE_CREATION_REQUEST,
                                        scim_policy=POLICY)  # fmt: skip
    name = (resource.display_name or "").strip()
    if Group.objects.filter(source_kind="scim", display_name__iexact=name).exists():
        raise ScimFailure(409, f"displayName {name!r} is already in use.", "uniqueness")
    with transaction.atomic():
        g = Group(tenant_id=actor.tenant_id, principal=f"scim:group:{secrets.token_hex(12)}", source_kind="scim")
        _store_group(g, resource)
        _audit(actor, "scim.group_created", "group", g.pk, {"displayName": g.display_name})
    return _respond(_dump(_group_resource(g, base), request, ScimGroup), 201, location=f"{base}Groups/{g.pk}")


@scim_view
def group_detail(request: HttpRequest, actor: Membership, pk: str) -> HttpResponse:
    g = _find_group(pk)
    base = _base(request)
    if request.method == "GET":
        return _respond(_dump(_group_resource(g, base), request, ScimGroup))
    if request.method == "DELETE":
        with transaction.atomic():
            _audit(actor, "scim.group_deleted", "group", g.pk, {"displayName": g.display_name})
            g.delete()
            bump_acl_version()
        return _respond(None, 204)
    if request.method == "PUT":
        resource = ScimGroup.model_validate(_body(request), scim_ctx=Context.RESOURCE_REPLACEMENT_REQUEST,
                                            scim_policy=POLICY)  # fmt: skip
    elif request.method == "PATCH":
        patch = PatchOp[ScimGroup].model_validate(_body(request), scim_ctx=Context.RESOURCE_PATCH_REQUEST,
                                                  scim_policy=POLICY)  # fmt: skip
        resource = _group_resource(g, base)
        patch.patch(resource, scim_policy=POLICY)
    else:
        raise ScimFailure(405, "GET, PUT, PATCH or DELETE.")
    name = (resource.display_name or "").strip()
    if Group.objects.filter(source_kind="scim", display_name__iexact=name).exclude(pk=g.pk).exists():
        raise ScimFailure(409, f"displayName {name!r} is already in use.", "uniqueness")
    with transaction.atomic():
        _store_group(g, resource)
        _audit(actor, "scim.group_updated", "group", g.pk, {"displayName": g.display_name})
    return _respond(_dump(_group_resource(g, base), request, ScimGroup))


# ------------------------------------------------------------------------------------- list + discovery


def _query(request: HttpRequest) -> dict[str, Any]:
    """The query of a GET list or of a POST .search (RFC 7644 §3.4.2 and §3.4.3), as GET-style strings."""
    if request.method == "POST":
        body = _body(request)
        out = {k: body.get(k) for k in ("filter", "startIndex", "count", "attributes", "excludedAttributes")}
        for key in ("attributes", "excludedAttributes"):
            value = out[key]
            if isinstance(value, list):
                out[key] = ",".join(map(str, value))
        return {k: str(v) for k, v in out.items() if v is not None}
    return {k: request.GET.get(k, "") for k in ("filter", "startIndex", "count", "attributes", "excludedAttributes")}


def _int_value(query: dict[str, Any], name: str, default: int) -> int:
    raw = query.get(name) or ""
    if raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ScimFailure(400, f"{name} must be an integer.", "invalidValue") from None


def _matching(model: type[Any], resources: list[Any], expression: str) -> list[Any]:
    if not expression:
        return resources
    try:
        flt = ScimFilter[model](expression)  # type: ignore[index,valid-type]
    except (ValueError, SCIMException):
        raise ScimFailure(400, "The filter is not valid SCIM filter syntax.", "invalidFilter") from None
    return [r for r in resources if flt.match(r)]


def _list(request: HttpRequest, model: Any, resources: list[Any], *, models: tuple[Any, ...] = ()) -> HttpResponse:
    query = _query(request)
    expression = (query.get("filter") or "").strip()
    if models:  # a search across resource types: each resource is filtered against its own model
        resources = [r for r in resources if _matching(type(r), [r], expression)]
    else:
        resources = _matching(model, resources, expression)
    start = max(1, _int_value(query, "startIndex", 1))  # RFC 7644 §3.4.2.4: below 1 reads as 1
    count = min(MAX_PAGE, max(0, _int_value(query, "count", MAX_PAGE)))
    page = resources[start - 1 : start - 1 + count]
    attributes, excluded = query.get("attributes") or None, query.get("excludedAttributes") or None
    params = None
    if attributes or excluded:
        params = ResponseParameters[model].model_validate(  # type: ignore[index]
            {"attributes": attributes, "excludedAttributes": excluded}
        )
    listing = ListResponse[model](  # type: ignore[valid-type]
        total_results=len(resources), start_index=start, items_per_page=len(page), resources=page
    )
    return _respond(listing.model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE, response_parameters=params))


@scim_view
def user_search(request: HttpRequest, actor: Membership) -> HttpResponse:
    if request.method != "POST":
        raise ScimFailure(405, "POST only.")
    return _list(request, ScimUser, [_user_resource(m, _base(request)) for m in _tenant_memberships().order_by("pk")])


@scim_view
def group_search(request: HttpRequest, actor: Membership) -> HttpResponse:
    if request.method != "POST":
        raise ScimFailure(405, "POST only.")
    base = _base(request)
    return _list(request, ScimGroup, [_group_resource(g, base) for g in
                                      Group.objects.filter(source_kind="scim").order_by("pk")])  # fmt: skip


@scim_view
def root_search(request: HttpRequest, actor: Membership) -> HttpResponse:
    if request.method != "POST":
        raise ScimFailure(405, "POST only.")
    base = _base(request)
    everything: list[Any] = [_user_resource(m, base) for m in _tenant_memberships().order_by("pk")]
    everything += [_group_resource(g, base) for g in Group.objects.filter(source_kind="scim").order_by("pk")]
    return _list(request, ScimUser | ScimGroup, everything, models=(ScimUser, ScimGroup))


@scim_view
def not_found(request: HttpRequest, actor: Membership, rest: str) -> HttpResponse:
    raise ScimFailure(404, "No such SCIM endpoint.")


def _service_provider_config(base: str) -> ServiceProviderConfig:
    return ServiceProviderConfig.model_validate({
        "schemas": ["urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig"],
        "documentationUri": None,
        "patch": {"supported": True},
        "bulk": {"supported": False, "maxOperations": 0, "maxPayloadSize": 0},
        "filter": {"supported": True, "maxResults": MAX_PAGE},
        "changePassword": {"supported": False},
        "sort": {"supported": False},
        "etag": {"supported": False},
        "authenticationSchemes": [{"type": "oauthbearertoken", "name": "OAuth Bearer Token", "primary": True,
                                   "description": "A provisioning token issued in the Cairn admin console."}],
        "meta": {"resourceType": "ServiceProviderConfig", "location": f"{base}ServiceProviderConfig"},
    })  # fmt: skip


def _resource_types(base: str) -> list[ResourceType]:
    out = []
    for model, name, endpoint in ((ScimUser, "User", "/Users"), (ScimGroup, "Group", "/Groups")):
        rt = ResourceType.from_resource(model)
        rt.endpoint = endpoint  # type: ignore[assignment]
        rt.id = name
        rt.meta = {"resourceType": "ResourceType", "location": f"{base}ResourceTypes/{name}"}  # type: ignore[assignment]
        out.append(rt)
    return out


def _schemas(base: str) -> list[Schema]:
    out = []
    for model in (ScimUser, ScimGroup):
        schema = model.to_schema()
        schema.meta = {"resourceType": "Schema", "location": f"{base}Schemas/{schema.id}"}  # type: ignore[assignment]
        out.append(schema)
    return out


def _discovery_list(items: list[Any]) -> dict[str, Any]:
    return {
        "schemas": ["urn:ietf:params:scim:api:messages:2.0:ListResponse"],
        "totalResults": len(items),
        "startIndex": 1,
        "itemsPerPage": len(items),
        "Resources": [i.model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE) for i in items],
    }


def _get_only(request: HttpRequest) -> None:
    if request.method != "GET":
        raise ScimFailure(405, "GET only.")


@scim_view
def service_provider_config(request: HttpRequest, actor: Membership) -> HttpResponse:
    _get_only(request)
    return _respond(_service_provider_config(_base(request)).model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE))


@scim_view
def resource_types(request: HttpRequest, actor: Membership) -> HttpResponse:
    _get_only(request)
    return _respond(_discovery_list(_resource_types(_base(request))))


@scim_view
def resource_type(request: HttpRequest, actor: Membership, name: str) -> HttpResponse:
    _get_only(request)
    for rt in _resource_types(_base(request)):
        if rt.id == name:
            return _respond(rt.model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE))
    raise ScimFailure(404, f"ResourceType {name} not found.")


@scim_view
def schemas(request: HttpRequest, actor: Membership) -> HttpResponse:
    _get_only(request)
    return _respond(_discovery_list(_schemas(_base(request))))


@scim_view
def schema(request: HttpRequest, actor: Membership, urn: str) -> HttpResponse:
    _get_only(request)
    for s in _schemas(_base(request)):
        if s.id == urn:
            return _respond(s.model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE))
    raise ScimFailure(404, f"Schema {urn} not found.")
