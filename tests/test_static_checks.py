"""The house style is enforced, not hoped for: ruff (lint + format) on everything, mypy on the app code."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT

APP_PACKAGES = ["cairn", "answers", "retrieval", "tenants", "connectors"]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_finds_nothing_to_lint_or_reformat() -> None:
    lint = _run("ruff", "check", ".")
    assert lint.returncode == 0, lint.stdout + lint.stderr
    fmt = _run("ruff", "format", "--check", ".")
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr


def test_mypy_finds_no_type_errors_in_the_app_code() -> None:
    # --cache-dir in the test-artifacts folder: a clean checkout has no .mypy_cache to reuse anyway.
    result = _run("mypy", "--cache-dir", str(ROOT / "test-artifacts" / "mypy-cache"), *APP_PACKAGES)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-2000:]
