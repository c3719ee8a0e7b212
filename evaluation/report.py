"""Suite results -> JSON + PNG + Markdown under ``reports/<suite>/<stamp>/`` and ``reports/latest/``.

Every figure in a report comes from the run that wrote it; the JSON records the command, the git
commit (and whether the tree was dirty), the machine, the models and the settings (release identity).
"""

from __future__ import annotations

import json
import os
import platform
import resource
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.conf import settings

from core.backends import get_backend

SECRET_SETTINGS = ("RERANKER_API_KEY",)


@dataclass
class SuiteResult:
    suite: str
    metrics: dict[str, Any]
    details: dict[str, Any] = field(default_factory=dict)
    markdown: str = ""
    plots: dict[str, Any] = field(default_factory=dict)  # file stem -> matplotlib Figure
    started_at: str = ""
    seconds: float = 0.0


def _git(*args: str) -> str:
    try:
        out = subprocess.run(["git", *args], cwd=settings.BASE_DIR, capture_output=True, text=True, timeout=10)
        return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def release_identity() -> dict[str, Any]:

    def describe(key: str) -> dict[str, str]:
        try:
            obj = get_backend(key)
        except Exception as exc:  # a misconfigured optional part is reported, not fatal
            return {"path": str(settings.CAIRN.get(key, "")), "error": type(exc).__name__}
        return {"path": str(settings.CAIRN.get(key, "")), "name": str(getattr(obj, "name", "")),
                "version": str(getattr(obj, "version", ""))}  # fmt: skip

    cairn = {k: v for k, v in settings.CAIRN.items() if k not in SECRET_SETTINGS}
    return {
        "git_commit": _git("rev-parse", "HEAD"),
        "git_dirty": bool(_git("status", "--porcelain", "--untracked-files=no")),
        "embedder": describe("EMBEDDER"),
        "index_backend": describe("INDEX_BACKEND"),
        "reranker": describe("RERANKER"),
        "writer": describe("WRITER"),
        "settings": cairn,
    }


def machine() -> dict[str, Any]:
    return {
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def write(result: SuiteResult, command: str, out_dir: Path) -> dict[str, Path]:
    """Write the suite's files into a timestamped folder and copy them to ``<out_dir>/latest``."""
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    run_dir = out_dir / result.suite / stamp
    latest = out_dir / "latest"
    run_dir.mkdir(parents=True, exist_ok=True)
    latest.mkdir(parents=True, exist_ok=True)
    payload: dict[str, Any] = {
        "suite": result.suite,
        "command": command,
        "started_at": result.started_at,
        "seconds": round(result.seconds, 2),
        "release": release_identity(),
        "machine": machine(),
        "metrics": result.metrics,
        "details": result.details,
    }
    files: dict[str, Path] = {}
    jpath = run_dir / f"{result.suite}.json"
    jpath.write_text(json.dumps(payload, indent=2, default=str, sort_keys=False))
    files["json"] = jpath
    plot_names = []
    for stem, fig in result.plots.items():
        p = run_dir / f"{result.suite}_{stem}.png"
        fig.savefig(p, dpi=110, bbox_inches="tight")
        plot_names.append(p.name)
        files[f"png:{stem}"] = p
        import matplotlib.pyplot as plt

        plt.close(fig)
    rel = payload["release"]
    header = (
        f"# Evaluation: {result.suite}\n\n"
        f"- run: {result.started_at} ({payload['seconds']} s), machine: {payload['machine']['cpus']} CPUs, "
        f"{payload['machine']['platform']}\n"
        f"- command: `{command}`\n"
        f"- commit: `{rel['git_commit'][:12]}`{' (uncommitted changes)' if rel['git_dirty'] else ''}; "
        f"embedder `{rel['embedder'].get('name', '')}`, reranker `{rel['reranker'].get('name', '')}` "
        f"v{rel['reranker'].get('version', '')}, writer `{rel['writer'].get('name', '')}`\n"
        f"- peak RSS of the run: {payload['machine']['peak_rss_mb']} MB\n\n"
    )
    md = header + result.markdown + "".join(f"\n![{n}]({n})\n" for n in plot_names)
    mpath = run_dir / f"{result.suite}.md"
    mpath.write_text(md)
    files["md"] = mpath
    for p in list(files.values()):
        shutil.copy2(p, latest / p.name)
    return files


def table(headers: list[str], rows: list[list[Any]]) -> str:
    def fmt(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:.4f}"
        return str(v)

    out = "| " + " | ".join(headers) + " |\n|" + "---|" * len(headers) + "\n"
    for r in rows:
        out += "| " + " | ".join(fmt(v) for v in r) + " |\n"
    return out
