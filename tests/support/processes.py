"""Worker processes started together: each prints ``ready``, waits for ``go`` on stdin (so they
all start their work at once), then prints one JSON result and exits 0."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

__all__ = ["ROOT", "run_together", "take_ctrl_c"]

ROOT = Path(__file__).resolve().parents[2]


def take_ctrl_c() -> None:
    """``preexec_fn`` of a process a test stops with SIGINT: a shell that starts the test run in
    the background (``pytest &`` in a script) makes it ignore SIGINT, and every child it starts
    would too, so Python would never raise KeyboardInterrupt in it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run_together(
    commands: Sequence[Sequence[str]],
    *,
    timeout: float = 120,
    extra_env: dict[str, str] | None = None,
    forbid: str | None = None,
) -> list[Any]:
    """Start one Python process per ``commands`` entry (its arguments after the interpreter),
    release them together, and return each one's JSON result, in order. A worker that does not
    start, fails, or (with ``forbid``) writes that text to stderr fails the test."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(extra_env or {})}
    procs = [
        subprocess.Popen(
            [sys.executable, *command],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for command in commands
    ]
    try:
        for p in procs:
            assert p.stdout is not None
            line = p.stdout.readline()
            if line.strip() != "ready":
                _, err = p.communicate(timeout=30)
                pytest.fail(f"worker did not start: {line!r}\n{err}")
        for p in procs:
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        results = []
        for p in procs:
            out, err = p.communicate(timeout=timeout)
            assert p.returncode == 0, f"worker failed (status {p.returncode}):\n{err}"
            if forbid is not None:
                assert forbid not in err
            results.append(json.loads(out))
        return results
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.communicate()
