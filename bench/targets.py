"""The parent's side of the targets: which Python runs each worker, the peer's venv, running one.

Reusable by any bench whose workers follow ``bench.harness``'s protocol (a spec file in, one
JSON object out): :func:`run_worker` runs a target's worker, pinned to one CPU or not.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .harness import ROOT

PEER_VENV = ROOT / ".bench-venv-peer"
#: The peer as installed in its own venv: the versions the targets were set against.
PEER_REQUIREMENTS = ("axio-context-sqlite==0.12.2", "axio==0.12.2")
PEER_PYTHON_VERSION = "3.12.1"  # the pyenv version that provides Python >= 3.12 on this machine


class WorkerError(RuntimeError):
    """A bench worker exited with an error or printed something other than its JSON result."""


@dataclass(frozen=True)
class Target:
    """A store under test: its worker module and the interpreter that runs it."""

    name: str
    module: str
    python: str

    def command(self, spec: Path, *, cpu: int | None) -> list[str]:
        """The worker's command line, under ``taskset -c CPU`` when ``cpu`` is given."""
        cmd = [self.python, "-m", self.module, str(spec)]
        return ["taskset", "-c", str(cpu), *cmd] if cpu is not None else cmd


def ours() -> Target:
    return Target("ours", "bench.worker_ours", sys.executable)


def raw() -> Target:
    return Target("raw", "bench.worker_raw", sys.executable)


def peer(log: Callable[[str], None] = print) -> Target:
    return Target("peer", "bench.worker_peer", str(ensure_peer_venv(log)))


def _peer_versions(python: Path) -> dict[str, str] | None:
    probe = (
        "import importlib.metadata as m, json, sys\n"
        "print(json.dumps({'python': sys.version.split()[0],"
        " 'axio-context-sqlite': m.version('axio-context-sqlite'), 'axio': m.version('axio')}))"
    )
    proc = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, cwd="/")
    if proc.returncode:
        return None
    versions: dict[str, str] = json.loads(proc.stdout)
    return versions


def ensure_peer_venv(log: Callable[[str], None] = print, venv: Path = PEER_VENV) -> Path:
    """The peer venv's Python, creating the venv and installing the peer first if needed."""
    python = venv / "bin" / "python"
    wanted = dict(req.split("==") for req in PEER_REQUIREMENTS)
    versions = _peer_versions(python) if python.exists() else None
    if versions is not None and all(versions.get(k) == v for k, v in wanted.items()):
        return python
    if not python.exists():
        log(f"creating the peer venv {venv} (Python {PEER_PYTHON_VERSION})")
        env = {**os.environ, "PYENV_VERSION": PEER_PYTHON_VERSION}
        # pyenv's own copy when there is one: a PATH with a version's bin/ before the shims
        # ignores PYENV_VERSION
        root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
        pinned = root / "versions" / PEER_PYTHON_VERSION / "bin" / "python3"
        maker = str(pinned) if pinned.exists() else "python3"
        subprocess.run([maker, "-m", "venv", str(venv)], check=True, env=env)
    log(f"installing {' '.join(PEER_REQUIREMENTS)} into {venv}")
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", *PEER_REQUIREMENTS], check=True)
    versions = _peer_versions(python)
    if versions is None or any(versions.get(k) != v for k, v in wanted.items()):
        raise WorkerError(f"the peer venv {venv} does not hold {PEER_REQUIREMENTS}: {versions}")
    if tuple(int(x) for x in versions["python"].split(".")[:2]) < (3, 12):
        raise WorkerError(f"the peer needs Python >= 3.12; {venv} has {versions['python']}")
    return python


def importable(target: Target) -> str | None:
    """``None`` if the target's worker module imports cleanly, else the error it raised."""
    proc = subprocess.run(
        [target.python, "-c", f"import {target.module}"], capture_output=True, text=True, cwd=ROOT
    )
    if proc.returncode == 0:
        return None
    lines = proc.stderr.strip().splitlines()
    return lines[-1] if lines else f"exit status {proc.returncode}"


def run_worker(target: Target, spec: dict[str, Any], spec_path: Path, *, cpu: int | None) -> dict[str, Any]:
    """Write ``spec`` to ``spec_path``, run the target's worker on it, return its JSON result."""
    spec_path.write_text(json.dumps(spec))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        target.command(spec_path, cpu=cpu), capture_output=True, text=True, cwd=ROOT, env=env
    )
    try:
        result: dict[str, Any] = json.loads(proc.stdout)
    except json.JSONDecodeError:
        result = {"error": f"no JSON on stdout: {proc.stdout[-500:]!r}"}
    if proc.returncode or "error" in result:
        detail = result.get("traceback") or proc.stderr[-3000:]
        raise WorkerError(f"{target.name} worker failed: {result.get('error')}\n{detail}")
    return result
