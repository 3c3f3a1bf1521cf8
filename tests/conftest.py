"""Shared fixtures. Integration tests run against one real lab cluster per session."""

from __future__ import annotations

import functools
import gc
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kaudit.connect.redact import forget_secrets


@dataclass(frozen=True)
class Run:
    """A finished kaudit subprocess."""

    code: int
    stdout: str
    stderr: str


def run_kaudit(*args: str, env: dict[str, str] | None = None, timeout: float = 300,
               cwd: str | None = None) -> Run:
    """Run the real `kaudit` CLI in a subprocess, as a user would."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("KAUDIT_")}
    full_env.update(env or {})
    proc = subprocess.run([sys.executable, "-m", "kaudit", *args], capture_output=True,
                          text=True, env=full_env, timeout=timeout, stdin=subprocess.DEVNULL,
                          cwd=cwd)
    return Run(proc.returncode, proc.stdout, proc.stderr)


def kaudit_on_path(tmp_path: Path) -> dict[str, str]:
    """An environment, without KAUDIT_ settings, whose PATH finds a `kaudit` that runs this
    checkout with this Python (as a CI job or a shell would call it)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    shim = bin_dir / "kaudit"
    shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m kaudit "$@"\n')
    shim.chmod(0o755)
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("KAUDIT_", "_KAUDIT"))}
    clean.update(PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
                 PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    return clean


@dataclass(frozen=True)
class Lab:
    """The session's lab cluster."""

    state_dir: str
    bootstrap: str

    def kaudit(self, *args: str, timeout: float = 300) -> Run:
        """Run a `kaudit lab` subcommand against this lab."""
        return run_kaudit("lab", *args, "--state-dir", self.state_dir, timeout=timeout)

    def status(self) -> dict[str, object]:
        """`kaudit lab status --format json`, parsed."""
        result = self.kaudit("status", "--format", "json")
        assert result.code == 0, result.stderr
        doc: dict[str, object] = json.loads(result.stdout)
        return doc


@functools.cache
def lab_admin(bootstrap: str) -> Any:
    """One long-lived admin client per lab for the tests' own setup (see ``lab``)."""
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": bootstrap})


@pytest.fixture(scope="session")
def lab() -> Iterator[Lab]:
    """Start a 3-broker lab once for all Kafka tests; stop and delete it at the end.

    KAUDIT_TEST_LAB_DIR reuses a running lab (for quick local iterations); it is
    then left running.
    """
    reuse = os.environ.get("KAUDIT_TEST_LAB_DIR")
    if reuse:
        doc = json.loads(run_kaudit("lab", "status", "-f", "json", "--state-dir", reuse).stdout)
        yield Lab(state_dir=reuse, bootstrap=doc["bootstrap"])
        return
    state_dir = tempfile.mkdtemp(prefix="kaudit-test-lab-")
    started = run_kaudit("lab", "up", "--state-dir", state_dir, timeout=900)
    if started.code != 0:
        shutil.rmtree(state_dir, ignore_errors=True)
        pytest.fail(f"kaudit lab up failed ({started.code}): {started.stderr}")
    try:
        yield Lab(state_dir=state_dir, bootstrap=started.stdout.strip())
    finally:
        # The tests' clients go before the brokers do: a client alive at exit would log
        # its failed reconnects to a stopped lab.
        lab_admin.cache_clear()
        gc.collect()
        run_kaudit("lab", "down", "--purge", "--state-dir", state_dir, timeout=120)
        shutil.rmtree(state_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres() -> Iterator[object]:
    """A private PostgreSQL server for the JDBC sink tests."""
    from tests.pg import running_postgres

    with running_postgres() as server:
        yield server


@pytest.fixture(autouse=True)
def _forget_secrets() -> Iterator[None]:
    """Each test starts with no remembered secrets."""
    forget_secrets()
    yield
    forget_secrets()


@pytest.fixture()
def isolated_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point kaudit's config file and env at an empty temporary home."""
    for key in list(os.environ):
        if key.startswith("KAUDIT_"):
            monkeypatch.delenv(key)
    cfg = tmp_path / "config.yaml"
    monkeypatch.setenv("KAUDIT_CONFIG", str(cfg))
    return cfg
