"""Typed connector forms, one per kind, for the console's add and edit pages.

The forms only collect and shape values; whether a configuration is acceptable is decided by
``connectors.actions.validate_connector_config`` / ``validate_connector_credentials``, the same
functions behind ``POST/PATCH /api/v1/connectors``, whose per-key problems
(``error.detail.fields``) are put under the matching field. So a half-configured SharePoint
connector gets "This setting is required." under the tenant id instead of a ``'tenant_id'``
crash at the first sync, and the console can never accept what the API refuses.

Secrets are write-only: their widgets never render a value, not even when the form comes back
with errors, and an empty secret on the edit page keeps the stored one.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from django import forms

from connectors.actions import validate_connector_config, validate_connector_credentials
from connectors.models import ConnectorInstance
from core.crypto import CredentialsError, decrypt_json
from core.errors import ApiError

# Kept by the runtime (connectors.actions.do_update_connector_instance keeps them too); not the admin's.
RUNTIME_KEYS = ("subscriptions", "subscription_expirations", "subscription_secret", "subscription_pending")


class WriteOnlyTextarea(forms.Textarea):
    """A textarea for a secret (a PEM): like PasswordInput(render_value=False), it never echoes the value."""

    def format_value(self, value: Any) -> None:
        return None


def _secret(label: str, help_text: str, *, textarea: bool = False) -> forms.CharField:
    widget: forms.Widget = (
        WriteOnlyTextarea(attrs={"rows": 4, "autocomplete": "off", "spellcheck": "false"})
        if textarea
        else forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"})
    )
    return forms.CharField(label=label, help_text=help_text, required=False, widget=widget, strip=True)


def stored_credential_keys(instance: ConnectorInstance) -> set[str]:
    """Which credentials are stored (their names only: the page says "stored", never the value)."""
    try:
        return {k for k, v in decrypt_json(instance.credentials_encrypted).items() if v}
    except CredentialsError:
        return set()


def _lines(value: str) -> list[str]:
    return [v for v in (part.strip() for part in value.replace(",", "\n").splitlines()) if v]


class ConnectorForm(forms.Form):
    """Common fields; subclasses declare their config and credential fields."""

    kind: ClassVar[str]
    config_fields: ClassVar[tuple[str, ...]]
    list_fields: ClassVar[tuple[str, ...]] = ()
    bool_fields: ClassVar[tuple[str, ...]] = ()
    credential_fields: ClassVar[tuple[str, ...]]
    # Which credentials a new connector cannot do without (one of each tuple).
    needed_credentials: ClassVar[tuple[tuple[str, ...], ...]] = ()
    # Browsers' "required" would stop the post before the shared validation could say why.
    use_required_attribute = False
    refusal = ""  # the shared validation's refusal with its API code, for the page's summary

    name = forms.CharField(label="Name", max_length=200, required=True)
    advanced = forms.BooleanField(
        label="Use the raw JSON below instead of the fields above", required=False,
        help_text="For settings without a field (graph_base_url, page_size, site_group_members…).",
    )  # fmt: skip
    raw_config = forms.CharField(label="Settings (JSON)", required=False, widget=forms.Textarea(attrs={"rows": 6}))

    def __init__(self, *args: Any, instance: ConnectorInstance | None = None, **kwargs: Any) -> None:
        self.instance = instance
        current = self.current_config()
        if instance is not None and "initial" not in kwargs:
            initial: dict[str, Any] = {"name": instance.source.name,
                                       "raw_config": json.dumps(current, indent=2, sort_keys=True)}  # fmt: skip
            for key in self.config_fields:
                value = current.get(key)
                if key in self.list_fields:
                    initial[key] = "\n".join(str(v) for v in value or ())
                elif value is not None:
                    initial[key] = value
            kwargs["initial"] = initial
        super().__init__(*args, **kwargs)
        if instance is not None:
            stored = stored_credential_keys(instance)
            for key in (k for k in self.credential_fields if k in stored):
                self.fields[key].help_text += " Stored; leave empty to keep it."

    def current_config(self) -> dict[str, Any]:
        config = dict(self.instance.config or {}) if self.instance is not None else {}
        return {k: v for k, v in config.items() if k not in RUNTIME_KEYS}

    def config_from_fields(self) -> dict[str, Any]:
        # Start from the stored settings: keys without a field (an operator's graph_base_url) survive an edit.
        config = self.current_config()
        for key in self.config_fields:
            value = self.cleaned_data.get(key)
            if key in self.list_fields:
                value = _lines(value or "")
            elif key in self.bool_fields:
                value = bool(value)
            if value in ("", [], None) and key not in self.bool_fields:
                config.pop(key, None)
            else:
                config[key] = value
        return config

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if self.cleaned_data.get("advanced"):
            try:
                config = json.loads(self.cleaned_data.get("raw_config") or "{}")
            except json.JSONDecodeError as exc:
                self.add_error("raw_config", f"Not valid JSON ({exc.msg}).")
                return data
            if not isinstance(config, dict):
                self.add_error("raw_config", "The settings must be a JSON object.")
                return data
        else:
            config = self.config_from_fields()
        credentials = {k: self.cleaned_data[k] for k in self.credential_fields if self.cleaned_data.get(k)}
        # Both checks run, so one post shows every problem (settings and credentials) at once.
        try:
            current = self.instance.config if self.instance is not None else None
            data["config"] = validate_connector_config(self.kind, config, current=current)
        except ApiError as exc:
            self._refused(exc, advanced=bool(self.cleaned_data.get("advanced")))
        try:
            data["credentials"] = validate_connector_credentials(self.kind, credentials)
        except ApiError as exc:
            self.add_error(None, f"{exc.detail} ({exc.error_code})")
        if self.instance is None:
            for options in self.needed_credentials:
                if not any(credentials.get(k) for k in options):
                    self.add_error(options[0], "Needed to connect." if len(options) == 1 else
                                   f"One of {' or '.join(self.fields[k].label or k for k in options)} is needed.")  # fmt: skip
        return data

    def _refused(self, exc: ApiError, *, advanced: bool) -> None:
        detail = exc.extra if isinstance(exc.extra, dict) else {}
        fields = detail.get("fields") or {}
        self.refusal = f"{exc.detail} ({exc.error_code})"
        placed = False
        for key, message in fields.items():
            if key in self.fields and not advanced:
                self.add_error(key, str(message))
                placed = True
        if not placed:
            self.add_error("raw_config" if advanced else None, self.refusal)


class ConfluenceForm(ConnectorForm):
    kind = "confluence"
    config_fields = ("site_url", "space_keys", "include_blogposts", "include_attachments", "cql_timezone")
    list_fields = ("space_keys",)
    bool_fields = ("include_blogposts", "include_attachments")
    credential_fields = ("email", "api_token")
    needed_credentials = (("email",), ("api_token",))

    site_url = forms.CharField(label="Site URL", required=False, max_length=500,
                               help_text="https://<your-site>.atlassian.net (Confluence Cloud).")  # fmt: skip
    space_keys = forms.CharField(
        label="Space keys", required=False, widget=forms.Textarea(attrs={"rows": 2}),
        help_text="One per line or comma separated; empty = every space the account can view.",
    )  # fmt: skip
    include_blogposts = forms.BooleanField(label="Index blog posts", required=False, initial=True)
    include_attachments = forms.BooleanField(label="Index attachments", required=False, initial=True)
    cql_timezone = forms.CharField(label="Time zone of the API account's profile", required=False, initial="UTC",
                                   max_length=64, help_text="CQL compares dates in it, e.g. Europe/Berlin.")  # fmt: skip
    email = forms.CharField(label="Account e-mail", required=False, max_length=254,
                            help_text="The Atlassian account the API token belongs to (write-only).",
                            widget=forms.EmailInput(attrs={"autocomplete": "off"}))  # fmt: skip
    api_token = _secret(
        "API token",
        "An Atlassian API token of a service account (id.atlassian.com → Security → API tokens; write-only). "
        "A classic token acts with the account's own rights: Can view on every space to index, and Confluence "
        "administrator to list groups and their members. A scoped token (site URL "
        "https://api.atlassian.com/ex/confluence/<cloud id>) needs the read scopes of the calls the connector "
        "makes: read:space:confluence, read:space.permission:confluence, read:page:confluence, "
        "read:blogpost:confluence, read:attachment:confluence, read:hierarchical-content:confluence (v2), "
        "read:content-details:confluence (restrictions), read:group:confluence, read:user:confluence and "
        "search:confluence (CQL, v1).",
    )


class SharePointForm(ConnectorForm):
    kind = "sharepoint"
    config_fields = ("tenant_id", "client_id", "site_ids", "include_lists", "include_pages")
    list_fields = ("site_ids",)
    bool_fields = ("include_lists", "include_pages")
    credential_fields = ("client_secret", "client_certificate")
    needed_credentials = (("client_secret", "client_certificate"),)

    tenant_id = forms.CharField(label="Directory (tenant) id", required=False, max_length=100,
                                help_text="Entra ID → Overview → Tenant ID (a GUID) or the tenant's domain.")  # fmt: skip
    client_id = forms.CharField(
        label="Application (client) id", required=False, max_length=100,
        help_text="Of an app registration with the Microsoft Graph application permissions (admin-consented): "
                  "Sites.Read.All — or Sites.Selected with read access granted per site — for files, lists, "
                  "pages and their permissions; User.Read.All and GroupMember.Read.All for people and group "
                  "members. Optional: Sites.FullControl.All so delta reports sharing changes.",
    )  # fmt: skip
    site_ids = forms.CharField(
        label="Site ids", required=False, widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Graph site ids, one per line: host,siteCollectionId,webId "
                  "(GET https://graph.microsoft.com/v1.0/sites/<host>:/sites/<path> shows it).",
    )  # fmt: skip
    include_lists = forms.BooleanField(label="Index list items", required=False, initial=True)
    include_pages = forms.BooleanField(label="Index site pages", required=False, initial=True)
    client_secret = _secret("Client secret", "A client secret of the app registration (write-only).")
    client_certificate = _secret(
        "Client certificate (PEM)",
        "Certificate and unencrypted private key in one PEM; needed for SharePoint site-group members "
        "(SharePoint REST refuses secret-based app tokens). Write-only.",
        textarea=True,
    )


class SlackForm(ConnectorForm):
    kind = "slack"
    config_fields = ("team_id", "workspace_domain", "include_bot_messages", "non_marketplace")
    bool_fields = ("include_bot_messages", "non_marketplace")
    credential_fields = ("token", "signing_secret", "previous_signing_secret")
    needed_credentials = (("token",), ("signing_secret",))

    team_id = forms.RegexField(label="Workspace (team) id", required=False, regex=r"^[TE][A-Z0-9]{2,20}$",
                               help_text="T… (auth.test shows it); the token must belong to this workspace.")  # fmt: skip
    workspace_domain = forms.CharField(label="Workspace domain", required=False, max_length=100,
                                       help_text="acme for acme.slack.com (links to messages).")  # fmt: skip
    include_bot_messages = forms.BooleanField(label="Index messages posted by bots", required=False)
    non_marketplace = forms.BooleanField(
        label="Not a Marketplace app", required=False,
        help_text="Apps outside the Slack Marketplace get 1 history call per minute; the backfill paces itself.",
    )  # fmt: skip
    token = _secret(
        "Bot token",
        "xoxb-… of the Slack app. Bot scopes the connector calls: channels:read, groups:read "
        "(conversations.list, .info, .members), channels:history, groups:history (conversations.history, "
        ".replies), channels:join (conversations.join), users:read, users:read.email (users.list, users.info); "
        "the answer bot adds chat:write, commands, app_mentions:read and im:history.",
    )
    signing_secret = _secret("Signing secret", "Basic Information → App Credentials; verifies every event.")
    previous_signing_secret = _secret("Previous signing secret", "Only while rotating: the old secret.")

    def clean_team_id(self) -> str:
        return str(self.cleaned_data.get("team_id") or "")


FORMS: dict[str, type[ConnectorForm]] = {f.kind: f for f in (ConfluenceForm, SharePointForm, SlackForm)}


def form_for(kind: str) -> type[ConnectorForm] | None:
    return FORMS.get(kind)
