"""The production deployment (docker/), checked structurally (no Docker engine here), and check --deploy."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[3]
DOCKER = ROOT / "docker"


def compose() -> dict[str, Any]:
    return yaml.safe_load((DOCKER / "compose.yml").read_text())


def env_example() -> dict[str, str]:
    pairs = re.findall(r"^([A-Z][A-Z0-9_]*)=(.*)$", (ROOT / ".env.example").read_text(), re.M)
    return dict(pairs)


def test_the_compose_file_runs_every_part_with_a_health_check() -> None:
    services = compose()["services"]
    assert {"db", "redis", "opensearch", "migrate", "web", "worker-ingest", "worker-permissions", "worker-answers",
            "beat"} <= set(services)  # fmt: skip
    for name, svc in services.items():
        if name != "migrate":  # a one-shot job: the others wait for it to complete successfully
            assert "test" in svc.get("healthcheck", {}), f"{name} has no health check"
    assert services["web"]["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    assert services["web"]["depends_on"]["opensearch"]["condition"] == "service_healthy"
    assert services["migrate"]["environment"]["DATABASE_URL"].startswith("${DATABASE_OWNER_URL")
    assert services["db"]["image"].startswith("pgvector/pgvector:")
    assert "gunicorn" in (DOCKER / "Dockerfile").read_text()


def test_each_worker_consumes_its_own_queue_and_together_they_cover_every_queue() -> None:
    services = compose()["services"]
    queues = {}
    for name in ("worker-ingest", "worker-permissions", "worker-answers"):
        cmd = services[name]["command"]
        assert cmd[:4] == ["celery", "-A", "cairn", "worker"]
        queues[name] = cmd[cmd.index("-Q") + 1]
    assert queues == {"worker-ingest": "ingest", "worker-permissions": "permissions", "worker-answers": "answers"}
    assert services["beat"]["command"][:4] == ["celery", "-A", "cairn", "beat"]


def test_opensearch_is_version_3_with_the_security_plugin_and_tls() -> None:
    svc = compose()["services"]["opensearch"]
    assert re.match(r"opensearchproject/opensearch:3\.", svc["image"])
    assert "DISABLE_SECURITY_PLUGIN" not in svc["environment"]
    assert svc["environment"]["DISABLE_INSTALL_DEMO_CONFIG"] == "true"  # own certificates, not the demo ones
    conf = yaml.safe_load((DOCKER / "opensearch" / "opensearch.yml").read_text())
    assert conf["plugins.security.ssl.http.enabled"] is True
    assert conf["plugins.security.ssl.transport.pemtrustedcas_filepath"] == "certs/root-ca.pem"
    assert "https://" in " ".join(svc["healthcheck"]["test"]) and "--cacert" in " ".join(svc["healthcheck"]["test"])
    env = env_example()
    assert env["CAIRN_OPENSEARCH_URL"].startswith("https://") and env["CAIRN_OPENSEARCH_VERIFY_CERTS"] == "1"
    roles = yaml.safe_load((DOCKER / "opensearch" / "roles.yml").read_text())
    assert roles["cairn_app"]["index_permissions"][0]["index_patterns"] == ["cairn-*"]


def test_env_example_lists_every_setting_and_every_compose_variable() -> None:
    listed = set(env_example())
    read = set(
        re.findall(r'env_(?:str|bool|int|list|float)\(\s*"([A-Z0-9_]+)"', (ROOT / "cairn" / "settings.py").read_text())
    )
    used = set(re.findall(r"\$\{([A-Z0-9_]+)", (DOCKER / "compose.yml").read_text()))
    assert read - listed == set()
    assert used - listed == set()


def test_check_deploy_is_clean_for_the_production_settings() -> None:
    from cryptography.fernet import Fernet

    # The production settings are .env.example's values; only secrets and service URLs are this machine's.
    # Only the machine's services from the test run's environment: not its CAIRN_* nor test-runner switches.
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_") and k != "DJANGO_ALLOW_ASYNC_UNSAFE"}
    env.update({k: v for k, v in env_example().items() if k not in ("DATABASE_URL", "REDIS_URL", "DATABASE_OWNER_URL")})
    env.update(
        CAIRN_SECRET_KEY="p" * 20 + "roduction-secret-key-with-enough-entropy-x7Q",
        CAIRN_CREDENTIALS_KEY=Fernet.generate_key().decode(),
        CAIRN_DB_APP_ROLE="cairn_app",
        CAIRN_INDEX_BACKEND="retrieval.backends.composite.CompositeIndexBackend",
    )
    # Against the test database as the app role: the RLS / role rules (tenants/checks.py) run too.
    r = subprocess.run([sys.executable, "manage.py", "check", "--deploy", "--database", "default"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=300)  # fmt: skip
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    # Django's security rules and the project's own: not one warning.  (Schema-generation notes from
    # drf-spectacular are not deployment issues.)
    assert re.findall(r"\((?:security|cairn|fields|models|auth)\.[EW]\d+\)", out) == [], out


def test_check_deploy_rejects_plain_http_or_unverified_opensearch() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_")}
    env.update(
        CAIRN_SECRET_KEY="x" * 60, CAIRN_INDEX_BACKEND="retrieval.backends.composite.CompositeIndexBackend",
        CAIRN_OPENSEARCH_URL="http://opensearch:9200", CAIRN_OPENSEARCH_VERIFY_CERTS="0",
    )  # fmt: skip
    r = subprocess.run([sys.executable, "manage.py", "check", "--deploy"], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=300)  # fmt: skip
    assert "cairn.E020" in r.stdout + r.stderr and "cairn.E021" in r.stdout + r.stderr
