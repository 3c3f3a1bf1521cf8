"""Shared fixtures. Integration tests run against one real lab cluster per session."""

from __future__ import annotations

import contextlib
import functools
import gc
import io
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kaudit.connection.redact import forget_secrets

if os.environ.get("KAUDIT_TEST_CPU_LOG"):  # opt-in: each test's CPU (tests/cpu_by_test.py)
    from tests.cpu_by_test import pytest_runtest_protocol  # noqa: F401


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


_kept_lab_logs: list[Path] = []
"""Where the logs of a test lab were kept because tests failed (see ``lab``)."""


def keep_lab_logs(state_dir: Path) -> None:
    """Copy the lab's node logs out of ``state_dir`` before it is deleted: a broker that died
    on restart in CI is otherwise gone with its reason."""
    kept = Path(tempfile.mkdtemp(prefix="kaudit-test-lab-logs-"))
    for log in sorted(state_dir.glob("*/server.log")):
        shutil.copy(log, kept / f"{log.parent.name}.log")
    _kept_lab_logs.append(kept)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """After a failed run on a test lab: where its logs are, and each node's last lines."""
    from kaudit.lab.process import since_last_start

    for kept in _kept_lab_logs:
        terminalreporter.section(f"test lab logs, kept in {kept}")
        for log in sorted(kept.glob("*.log")):
            starts, since = since_last_start(log.read_text(errors="replace").splitlines())
            bad = [ln for ln in since if " ERROR " in ln or " FATAL " in ln]
            terminalreporter.write_line(f"--- {log.name}: started {starts} time(s); "
                                        f"{len(bad)} ERROR/FATAL line(s) since the last start"
                                        + (", the last ones:" if bad else ""))
            for line in bad[-6:]:
                terminalreporter.write_line(f"    {line[:300]}")


@pytest.fixture(scope="session")
def lab(request: pytest.FixtureRequest) -> Iterator[Lab]:
    """Start a 3-broker lab once for all Kafka tests; stop and delete it at the end.

    KAUDIT_TEST_LAB_DIR reuses a running lab (for quick local iterations); it is
    then left running, unless KAUDIT_TEST_LAB_OWNED=1 says this session owns it (.ci/run
    starts the lab while the fast tier runs): then it is stopped and deleted at the end,
    its logs kept when a test failed, as a lab started here.
    """
    reuse = os.environ.get("KAUDIT_TEST_LAB_DIR")
    if reuse:
        doc = json.loads(run_kaudit("lab", "status", "-f", "json", "--state-dir", reuse).stdout)
        state_dir, bootstrap = reuse, str(doc["bootstrap"])
        if os.environ.get("KAUDIT_TEST_LAB_OWNED") != "1":
            yield Lab(state_dir=reuse, bootstrap=bootstrap)
            return
    else:
        state_dir = tempfile.mkdtemp(prefix="kaudit-test-lab-")
        started = run_kaudit("lab", "up", "--state-dir", state_dir, timeout=900)
        if started.code != 0:
            shutil.rmtree(state_dir, ignore_errors=True)
            pytest.fail(f"kaudit lab up failed ({started.code}): {started.stderr}")
        bootstrap = started.stdout.strip()
    try:
        yield Lab(state_dir=state_dir, bootstrap=bootstrap)
    finally:
        # The tests' clients go before the brokers do: a client alive at exit would log
        # its failed reconnects to a stopped lab.
        lab_admin.cache_clear()
        gc.collect()
        if request.session.testsfailed:
            keep_lab_logs(Path(state_dir))  # as the tests left them, before the shutdown
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


@pytest.fixture()
def restore_brokers() -> None:
    """Declares that a test kills, stops or pauses lab brokers on purpose: the lab check
    after it (:func:`_lab_left_healthy`) brings them back without failing the test."""


@pytest.fixture(autouse=True)
def _lab_left_healthy(request: pytest.FixtureRequest) -> Iterator[None]:
    """After every test on the shared lab: every broker runs, is registered, and every
    partition has its full ISR again. What a test left broken is repaired here, and the
    test that broke it fails by name (unless it declared ``restore_brokers``), so one test
    cannot make a later one fail."""
    yield
    if "lab" not in request.fixturenames:
        return
    lab: Lab = request.getfixturevalue("lab")
    left_down, unhealthy = heal_lab(lab)
    if unhealthy or (left_down and "restore_brokers" not in request.fixturenames):
        pytest.fail(f"{request.node.nodeid} left the shared lab unhealthy: "
                    f"{'; '.join(left_down + unhealthy)}", pytrace=False)


def wait_for(cond: Callable[[], bool], timeout: float) -> bool:
    """Ask ``cond`` until it holds (True) or ``timeout`` seconds pass (False); an exception
    (metadata not there yet, a broker just restarted) counts as "not yet".

    A slow question (one of Kafka's tools, a whole `kaudit check`) is asked at most a third
    of the time: asked back to back it would take a core from the brokers and the other
    test shares for as long as the wait lasts."""
    deadline = time.monotonic() + timeout
    while True:
        asked = time.monotonic()
        try:
            if cond():
                return True
        except Exception:
            pass
        now = time.monotonic()
        if now >= deadline:
            return False
        time.sleep(min(max(0.3, 2 * (now - asked)), deadline - now))


def interrupt_when(proc: subprocess.Popen[str], reached: Callable[[], bool],
                   timeout: float = 120, wait: float = 180,
                   sig: signal.Signals = signal.SIGINT) -> str:
    """Ctrl-C (SIGINT, or ``sig``) to ``proc`` once ``reached()`` holds (or it ended, or
    ``timeout`` passed); its stdout. A run that does not then exit 130 fails the test."""
    wait_for(lambda: reached() or proc.poll() is not None, timeout)
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=wait)
    assert proc.returncode == 130, stderr
    return stdout


def heal_lab(lab: Lab) -> tuple[list[str], list[str]]:
    """Restart or resume every broker that is not running, then wait until all are
    registered and in every ISR. Returns (brokers that were not running, what is still
    wrong after the waits)."""
    from kaudit.lab.manager import BrokerView, lab_start
    from kaudit.lab.state import LabState, NodeState, node_state

    state_dir = Path(lab.state_dir)
    brokers = LabState.load(state_dir).brokers
    left_down = []
    for broker in brokers:
        current = node_state(broker)
        if current is not NodeState.running:
            left_down.append(f"broker {broker.id} was {current.value} (restarted)")
            lab_start(state_dir, broker.id, wait_s=120)
    admin = lab_admin(lab.bootstrap)
    view = BrokerView({"bootstrap.servers": lab.bootstrap})
    unhealthy = []
    if not wait_for(lambda: len(view.live()) == len(brokers), 90):
        unhealthy.append("not every broker registered after 90 s")

    def out_of_sync() -> list[str]:
        md = admin.list_topics(timeout=5)
        return [f"{t.topic}[{p.id}] isr={list(p.isrs)} replicas={list(p.replicas)}"
                for t in md.topics.values() for p in t.partitions.values()
                if len(p.isrs) < len(p.replicas)]

    if not wait_for(lambda: not out_of_sync(), 120):
        lagging = out_of_sync()
        unhealthy.append(f"{len(lagging)} partition(s) not in sync after 120 s, e.g. "
                         f"{', '.join(lagging[:3])}")
    return left_down, unhealthy


@pytest.fixture(scope="session")
def schema_registry() -> Iterator[object]:
    """One private Schema Registry (Apicurio) for the run, started on first use: the
    registry tests read from it and the lab's Connect worker writes to it."""
    from tests.registry import running_registry

    with running_registry() as server:
        yield server


@pytest.fixture(scope="session")
def local_spark() -> Iterator[Any]:
    """One local Spark, started as `kaudit reconcile` starts its own (same jars and settings),
    for the whole run: in-process reconcile runs (:func:`run_in_process`) use it instead of
    paying a driver's start-up each, as kaudit uses a session its process already runs."""
    from kaudit.reconcile.spark import connector_jars, start_session, stop_session

    # With Iceberg's runtime: the Iceberg sink's tests read a table through this session.
    spark = start_session("local[*]", connector_jars(iceberg=True, avro=True))
    try:
        yield spark
    finally:
        stop_session(spark)


@functools.cache
def _shared_float_types() -> tuple[Any, ...]:
    """The float parameter types the app's commands share between builds (click's own
    FLOAT among them): :func:`kaudit.cli.root.prepared` wraps their ``convert`` in each
    ``main`` call, once per process for the console script."""
    import typer

    from kaudit.cli.app import app
    from kaudit.cli.clicompat import FloatParamType, Group

    def float_types(command: Any) -> dict[int, Any]:
        found = {id(p.type): p.type for p in command.params
                 if isinstance(p.type, FloatParamType)}
        for sub in command.commands.values() if isinstance(command, Group) else ():
            found |= float_types(sub)
        return found

    first, second = (float_types(typer.main.get_command(app)) for _ in range(2))
    return tuple(t for key, t in first.items() if key in second)


@contextlib.contextmanager
def _as_a_fresh_process(env: dict[str, str] | None) -> Iterator[None]:
    """What a new ``kaudit`` process would start from, and what one call leaves behind put
    back afterwards: the environment without ``KAUDIT_`` settings (as :func:`run_kaudit`
    gives it) plus ``env``, an empty standard input, kaudit's logging set-up and the float
    options' ``convert`` (each call wraps it again)."""
    import logging

    saved_env = dict(os.environ)
    loggers = [logging.getLogger("kaudit"), logging.getLogger("kaudit.librdkafka")]
    saved_loggers = [(lg, lg.handlers[:], lg.propagate, lg.level) for lg in loggers]
    saved_converts = [(t, vars(t).get("convert")) for t in _shared_float_types()]
    saved_stdin = sys.stdin
    try:
        for key in [k for k in os.environ if k.startswith("KAUDIT_")]:
            del os.environ[key]
        os.environ.update(env or {})
        sys.stdin = io.StringIO("")
        yield
    finally:
        sys.stdin = saved_stdin
        os.environ.clear()
        os.environ.update(saved_env)
        for lg, handlers, propagate, level in saved_loggers:
            lg.handlers[:] = handlers
            lg.propagate = propagate
            lg.setLevel(level)
        for float_type, convert in saved_converts:
            if convert is None:
                vars(float_type).pop("convert", None)
            else:
                setattr(float_type, "convert", convert)  # noqa: B010 - as finite_floats does


def run_in_process(*args: str, env: dict[str, str] | None = None) -> Run:
    """Run kaudit's real entry point (``main``) in this process, as the console script
    does, capturing what it prints and its exit code: :func:`run_kaudit` without a new
    interpreter's start-up, for tests of what kaudit says and exits with rather than of
    its process (signals, start-up, the console script, fd-level output, a hang guard).
    Like there, ``KAUDIT_`` settings are left out of the environment, ``env`` is added,
    and standard input is empty; all of it is put back afterwards."""
    from kaudit.cli.app import main

    out, err = io.StringIO(), io.StringIO()
    with _as_a_fresh_process(env), contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(err):
        try:
            main(list(args))
            code = 0
        except SystemExit as done:
            code = int(done.code or 0)
    return Run(code, out.getvalue(), err.getvalue())
