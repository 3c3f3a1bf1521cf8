"""The audit lab: one lab with everything the cluster-wide rules (issue 52) read, shared by
their tests: three controllers in a dynamic quorum (KIP-853, kraft.version 1), tiered
storage on the brokers (Kafka's LocalTieredStorage), and broker 2 started with its own
``replica.lag.time.max.ms`` (brokers that disagree).

A test under tests/integration asks for the session fixture ``audit_lab`` by name
(tests/integration/conftest.py brings it in): the first test to ask starts the lab, and it
is stopped and purged when the session ends, whatever the tests did.
``KAUDIT_TEST_AUDIT_LAB_DIR=DIR`` uses a lab already running there (started with
:data:`AUDIT_LAB_OPTIONS`) and leaves it running. Outside pytest,
:func:`running_audit_lab` starts and stops one.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import Run, keep_lab_logs, lab_admin, run_kaudit
from tests.kafka_tools import kafka_tool

LAGGING_BROKER = 2
LAG_TIME_MS = 60000
"""Broker :data:`LAGGING_BROKER`'s own ``replica.lag.time.max.ms`` (the others keep Kafka's
default)."""

AUDIT_LAB_OPTIONS = ("--controllers", "3", "--dynamic-quorum", "--tiered-storage",
                     "--broker-config",
                     f"{LAGGING_BROKER}:replica.lag.time.max.ms={LAG_TIME_MS}")
"""What ``kaudit lab up`` is given for the audit lab."""


@dataclass(frozen=True)
class AuditLab:
    """A running audit lab."""

    state_dir: str
    bootstrap: str
    controllers: tuple[int, ...]
    """The controllers' (voters') node ids."""
    bootstrap_controllers: str
    """The controllers' endpoints, for ``--bootstrap-controller`` of Kafka's tools."""
    remote_storage: Path | None
    """Where LocalTieredStorage keeps the remote segments, one folder per partition (None:
    the lab has no tiered storage)."""

    def kaudit(self, *args: str, timeout: float = 300) -> Run:
        """Run a `kaudit lab` subcommand against this lab."""
        return run_kaudit("lab", *args, "--state-dir", self.state_dir, timeout=timeout)

    def kafka_tool(self, main_class: str, *args: str, timeout: float = 120
                   ) -> subprocess.CompletedProcess[str]:
        """One of Kafka's own command-line tools (e.g.
        ``org.apache.kafka.tools.MetadataQuorumCommand``), from the lab's jars."""
        return kafka_tool(main_class, *args, timeout=timeout, check=False)


def _audit_lab_of(status: dict[str, object]) -> AuditLab:
    controllers = status["controllers"]
    assert isinstance(controllers, list)
    return AuditLab(
        state_dir=str(status["state_dir"]), bootstrap=str(status["bootstrap"]),
        controllers=tuple(int(c["id"]) for c in controllers),
        bootstrap_controllers=",".join(f"127.0.0.1:{c['port']}" for c in controllers),
        remote_storage=Path(str(status["tiered_storage"])) if status["tiered_storage"] else None)


@contextlib.contextmanager
def running_lab(*options: str, parent: str | Path | None = None) -> Iterator[AuditLab]:
    """Start a lab with ``options`` in a new directory under ``parent`` (the system's
    temporary directory by default); stop and delete it when the block ends, however it
    ends."""
    state_dir = tempfile.mkdtemp(prefix="kaudit-audit-lab-", dir=parent)
    try:
        started = run_kaudit("lab", "up", *options, "--state-dir", state_dir, "-f", "json",
                             timeout=900)
        if started.code != 0:
            keep_lab_logs(Path(state_dir))
            raise RuntimeError(f"kaudit lab up {' '.join(options)} failed "
                               f"({started.code}): {started.stderr[-2000:]}")
        yield _audit_lab_of(json.loads(started.stdout))
    finally:
        # The tests' clients go before the brokers do (a client alive at exit would log
        # its reconnects to a stopped lab).
        lab_admin.cache_clear()
        gc.collect()
        run_kaudit("lab", "down", "--purge", "--state-dir", state_dir, timeout=120)
        shutil.rmtree(state_dir, ignore_errors=True)


def running_audit_lab(parent: str | Path | None = None
                      ) -> contextlib.AbstractContextManager[AuditLab]:
    """An audit lab for the block (see :func:`running_lab`)."""
    return running_lab(*AUDIT_LAB_OPTIONS, parent=parent)


@pytest.fixture(scope="session")
def audit_lab(request: pytest.FixtureRequest) -> Iterator[AuditLab]:
    """The session's audit lab (see the module's doc), started on first use."""
    reuse = os.environ.get("KAUDIT_TEST_AUDIT_LAB_DIR")
    if reuse:
        status = run_kaudit("lab", "status", "-f", "json", "--state-dir", reuse)
        assert status.code == 0, status.stderr
        yield _audit_lab_of(json.loads(status.stdout))
        return
    failed_before = request.session.testsfailed
    with running_audit_lab() as lab:
        try:
            yield lab
        finally:
            if request.session.testsfailed > failed_before:
                # As the tests left it, before it is stopped and deleted.
                keep_lab_logs(Path(lab.state_dir))
