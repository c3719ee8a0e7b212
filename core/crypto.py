"""Credentials at rest: Fernet with ``settings.CREDENTIALS_KEY``.

Decrypted values live only in memory for the duration of a sync / webhook check; they are
never logged, never put in errors and never returned by any API.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings

from core.logfilters import remember_secrets


class CredentialsError(RuntimeError):
    """No key configured, or a value that this key did not encrypt (the message names no secret)."""


def _fernet() -> Fernet:
    key = settings.CREDENTIALS_KEY
    if not key:
        raise CredentialsError("CAIRN_CREDENTIALS_KEY is not set: connector credentials cannot be stored")
    return Fernet(key.encode() if isinstance(key, str) else key)


def encrypt_json(value: dict[str, Any]) -> str:
    remember_secrets(value.values())
    return _fernet().encrypt(json.dumps(value, sort_keys=True).encode()).decode()


def decrypt_json(token: str) -> dict[str, Any]:
    if not token:
        return {}
    try:
        value = dict(json.loads(_fernet().decrypt(token.encode())))
    except (InvalidToken, ValueError):
        raise CredentialsError("stored credentials cannot be decrypted with the configured key") from None
    # Whatever a library logs while these are in use (a reflected Authorization header...) is scrubbed.
    remember_secrets(value.values())
    return value


def encrypt_text(value: str) -> str:
    remember_secrets([value])
    return _fernet().encrypt(value.encode()).decode() if value else ""


def decrypt_text(token: str) -> str:
    if not token:
        return ""
    try:
        value = _fernet().decrypt(token.encode()).decode()
    except InvalidToken:
        raise CredentialsError("a stored secret cannot be decrypted with the configured key") from None
    remember_secrets([value])
    return value


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file, read in 1 MB blocks (model weights are tens of MB to a GB)."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
