"""Start a probe's worker process (``python -m MODULE``) with its settings on stdin."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any


def spawn_worker(module: str, config: dict[str, Any], err: Path,
                 stdout: int = subprocess.DEVNULL) -> subprocess.Popen[bytes]:
    """``python -m module`` in a session of its own (a Ctrl-C at the terminal reaches the
    runner only), its stderr to ``err``, ``config`` as JSON on its stdin: the connection's
    secrets go through the pipe, never argv or the environment. ``stdout``: where its
    output goes (``subprocess.PIPE`` for a worker that reports on it)."""
    with err.open("wb") as err_file:
        proc = subprocess.Popen([sys.executable, "-m", module], stdin=subprocess.PIPE,
                                stdout=stdout, stderr=err_file, start_new_session=True)
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(config).encode())
    proc.stdin.close()
    return proc
