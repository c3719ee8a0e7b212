"""Load the pluggable parts named by dotted path in ``settings.CAIRN``."""

from __future__ import annotations

import functools
from typing import Any

from django.conf import settings
from django.utils.module_loading import import_string


@functools.cache
def get_backend(key: str) -> Any:
    """One instance per process of the class named by ``settings.CAIRN[key]``."""
    cls = import_string(settings.CAIRN[key])
    return cls()


def embedder() -> Any:
    return get_backend("EMBEDDER")


def index_backend() -> Any:
    return get_backend("INDEX_BACKEND")


def writer() -> Any:
    return get_backend("WRITER")
