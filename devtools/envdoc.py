"""Render ``.env.example`` as the configuration reference (``docs/configuration.md``).

``.env.example`` is the one list of the variables Cairn reads (a test checks that every variable the
settings read is in it); this page is generated from it so the two cannot drift:

    .venv/bin/python -m devtools.envdoc > docs/configuration.md

``tests/operations/test_deploy_checks.py`` fails when the committed page differs from a fresh rendering.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_SECTION = re.compile(r"^#\s*---\s*(.+?)\s*-*\s*$")
_VAR = re.compile(r"^#?\s*([A-Z][A-Z0-9_]+)=(.*)$")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").strip()


def render(env_example: str) -> str:
    out = [
        "# Configuration",
        "",
        "Generated from [`.env.example`](../.env.example) by `python -m devtools.envdoc`; do not edit by hand.",
        "Settings are read through typed helpers that fail loudly (`cairn/env.py`); a value here is the",
        "example or default shown in `.env.example`, not necessarily what the embedded stack sets.",
    ]
    comments: list[str] = []
    in_table = False
    for raw in env_example.splitlines():
        line = raw.rstrip()
        section = _SECTION.match(line)
        if section:
            out += ["", f"## {section.group(1)}", "", "| variable | example | what |", "|---|---|---|"]
            in_table, comments = True, []
            continue
        var = _VAR.match(line)
        if var and in_table:
            name, value = var.groups()
            commented_out = line.startswith("#")
            what = " ".join(comments) + (" (commented out in `.env.example`)" if commented_out else "")
            out.append(f"| `{name}` | {('`' + _cell(value) + '`') if value else ''} | {_cell(what)} |")
            comments = []
            continue
        if line.startswith("#"):
            comments.append(line.lstrip("#").strip())
        elif not line:
            comments = []
    return "\n".join(out) + "\n"


def main() -> None:
    sys.stdout.write(render((ROOT / ".env.example").read_text()))


if __name__ == "__main__":
    main()
