"""The embedded launcher sizes Postgres' memory from the machine (cairn/stack.py, docs/vector-benchmark.md)."""

from __future__ import annotations

import pytest

from cairn.stack import memory_tuning

GB = 1 << 30


def test_it_gives_a_quarter_of_memory_to_shared_buffers_and_half_to_the_cache_estimate(monkeypatch) -> None:
    monkeypatch.delenv("CAIRN_PG_SHARED_BUFFERS", raising=False)
    monkeypatch.delenv("CAIRN_PG_EFFECTIVE_CACHE_SIZE", raising=False)
    assert memory_tuning(8 * GB) == {"shared_buffers": "2048MB", "effective_cache_size": "4096MB"}


@pytest.mark.parametrize(("total", "shared"), [(256 << 20, "128MB"), (64 * GB, "4096MB")])
def test_it_keeps_shared_buffers_between_128_mb_and_4_gb(monkeypatch, total: int, shared: str) -> None:
    monkeypatch.delenv("CAIRN_PG_SHARED_BUFFERS", raising=False)
    assert memory_tuning(total)["shared_buffers"] == shared


def test_the_operator_overrides_either_setting(monkeypatch) -> None:
    monkeypatch.setenv("CAIRN_PG_SHARED_BUFFERS", "1GB")
    monkeypatch.setenv("CAIRN_PG_EFFECTIVE_CACHE_SIZE", "3GB")
    assert memory_tuning(32 * GB) == {"shared_buffers": "1GB", "effective_cache_size": "3GB"}


def _compose_postgres_args(tmp_path, **env: str) -> list[str]:
    """docker/postgres-memory.sh's arguments to the image's entrypoint (a stand-in that prints them)."""
    import os
    import subprocess
    from pathlib import Path

    stub = tmp_path / "docker-entrypoint.sh"
    stub.write_text('#!/bin/sh\nprintf "%s\\n" "$@"\n')
    stub.chmod(0o755)
    script = Path(__file__).resolve().parents[2] / "docker" / "postgres-memory.sh"
    run_env = {"PATH": f"{tmp_path}:{os.environ['PATH']}", **env}
    out = subprocess.run(["sh", str(script), "postgres", "-c", "jit=off"], env=run_env, capture_output=True,
                         text=True, check=True)  # fmt: skip
    return out.stdout.split()


def test_the_compose_postgres_gets_a_quarter_of_the_containers_memory(tmp_path) -> None:
    with open("/proc/meminfo") as fh:
        total_mb = int(next(line.split()[1] for line in fh if line.startswith("MemTotal:"))) // 1024
    args = _compose_postgres_args(tmp_path)
    assert args[:3] == ["postgres", "-c", "jit=off"]
    shared = int(next(a for a in args if a.startswith("shared_buffers=")).split("=")[1].removesuffix("MB"))
    assert shared == min(max(total_mb // 4, 128), 8192) or shared < total_mb // 4  # a cgroup limit only lowers it
    assert any(a.startswith("effective_cache_size=") for a in args)


def test_the_compose_postgres_takes_the_operators_sizes(tmp_path) -> None:
    args = _compose_postgres_args(tmp_path, PG_SHARED_BUFFERS="2GB", PG_EFFECTIVE_CACHE_SIZE="6GB")
    assert "shared_buffers=2GB" in args and "effective_cache_size=6GB" in args
