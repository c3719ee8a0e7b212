"""The house style is enforced, not hoped for: ruff (lint + format) on everything, mypy on the app code,
and the floor plan (pyproject.toml's import-linter contracts) on every import."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.support import ROOT

APP_PACKAGES = ["core", "tenants", "retrieval", "connectors", "answers", "portal", "console", "slackbot", "identity", "evaluation",
                "devtools", "cairn"]  # fmt: skip


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


def test_every_import_respects_the_floor_plan() -> None:
    # lint-imports reads [tool.importlinter] in pyproject.toml: the layers contract and the forbidden ones.
    result = subprocess.run([str(ROOT / ".venv" / "bin" / "lint-imports"), "--no-cache"], cwd=ROOT,
                            capture_output=True, text=True, timeout=300)  # fmt: skip
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-2000:]
    assert "0 broken" in result.stdout


def test_the_contract_lists_no_exceptions() -> None:
    # "ignore_imports" would let an arrow run back up a floor; the floor plan allows none.
    assert "ignore_imports" not in (ROOT / "pyproject.toml").read_text()


def test_every_module_of_ours_imports_at_module_level_without_a_cycle() -> None:
    # Our own imports sit at module level (docs/contributing.md); an import cycle between modules would
    # only show when a module is imported first, so import every one in a fresh interpreter.
    script = (
        "import django, importlib, pkgutil; django.setup()\n"
        "for pkg in " + repr(APP_PACKAGES) + ":\n"
        "    root = importlib.import_module(pkg)\n"
        "    for info in pkgutil.walk_packages(root.__path__, pkg + '.'):\n"
        "        if '.migrations' not in info.name and info.name != 'cairn.stack':\n"
        "            importlib.import_module(info.name)\n"
    )
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="cairn.settings")
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=300)  # fmt: skip
    assert result.returncode == 0, result.stderr[-5000:]
