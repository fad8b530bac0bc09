"""A Python 3.12 venv holding the seed packages that need 3.12 (axio 0.12.2 and its OpenAI
transport, pygents 0.7.0), made on first use next to the repository and reused after.

Our own code is not installed there: a script run with :func:`run` imports it from the source
tree (``PYTHONPATH``), with msgspec, our one import-time dependency, installed beside the seeds.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
VENV = REPO / ".venv-seeds-py312"
#: What the venv holds; a venv made for another list is made again.
PACKAGES = ("axio==0.12.2", "axio-transport-openai==0.12.2", "pygents==0.7.0", "msgspec>=0.18.6")


def _is_312(command: list[str], env: dict[str, str]) -> bool:
    try:
        done = subprocess.run(
            [*command, "-c", "import sys; print(sys.version_info >= (3, 12))"],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and done.stdout.strip() == "True"


def interpreter() -> tuple[list[str], dict[str, str]] | None:
    """A command running Python >= 3.12 and its environment, or None where there is none."""
    if sys.version_info >= (3, 12):
        return [sys.executable], dict(os.environ)
    candidates: list[tuple[list[str], dict[str, str]]] = []
    if os.environ.get("AXIO_SEEDS_PYTHON"):
        candidates.append(([os.environ["AXIO_SEEDS_PYTHON"]], dict(os.environ)))
    if shutil.which("python3.12"):
        candidates.append((["python3.12"], dict(os.environ)))
    # pyenv's builds, which its shims run only when that version is selected
    pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    for build in sorted(pyenv_root.glob("versions/3.1[2-9]*/bin/python3")):
        candidates.append(([str(build)], dict(os.environ)))
    for command, env in candidates:
        if _is_312(command, env):
            return command, env
    return None


def venv_python() -> Path:
    """The venv's interpreter, the venv made (or remade) first when needed; skips the test only
    when no Python 3.12 exists here. A failed install fails the test."""
    python = VENV / "bin" / "python"
    stamp = VENV / ".packages"
    wanted = "\n".join(PACKAGES)
    if python.is_file() and stamp.is_file() and stamp.read_text() == wanted:
        return python
    found = interpreter()
    if found is None:
        pytest.skip("no Python >= 3.12 on this machine (axio 0.12.2 and pygents 0.7.0 need it)")
    command, env = found
    shutil.rmtree(VENV, ignore_errors=True)
    subprocess.run([*command, "-m", "venv", str(VENV)], env=env, check=True, timeout=300)
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", *PACKAGES],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert install.returncode == 0, f"installing {PACKAGES} into {VENV} failed:\n{install.stderr}"
    stamp.write_text(wanted)
    return python


def run(script: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``script`` with the venv's Python, our package importable from the source tree."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env["PYTHONPATH"] = str(REPO)
    return subprocess.run(
        [str(venv_python()), str(script), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=600,
        check=False,
    )
