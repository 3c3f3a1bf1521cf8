"""Run one share-group probe: write sequenced records, run a share group of worker
processes over them (one may hold its locks and be killed), wait until every record has
reached its end, and account for each.

The data flows one way: settings -> topic (the records the brokers acknowledged) ->
workers (journals) -> events -> :func:`~kaudit.probe.share.verify.verify` -> report.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from kaudit.cluster.client import AdminSession, new_producer
from kaudit.cluster.share_admin import delivery_limit, set_group_configs
from kaudit.cluster.topics import TopicSpec, create_probe_topic, delete_probe_topic
from kaudit.connection.settings import ConnectionSettings
from kaudit.errors import ConnectionFailure
from kaudit.probe.share.model import ShareReport, ShareSettings
from kaudit.probe.share.verify import Action, Event, Fate, parse_event, verify
from kaudit.probe.share.worker import holding_name, journal_name, record_value
from kaudit.probe.spawn import spawn_worker
from kaudit.waiting import Deadline

STOP_WAIT_S = 30.0
"""How long a worker may take to leave after SIGTERM."""
KILLED = "SIGKILLed while it held its records' locks"


class Workers:
    """The run's worker processes, each with its journal in ``run_dir``."""

    def __init__(self, config: dict[str, Any], run_dir: Path) -> None:
        self.config, self.run_dir = config, run_dir
        self.procs: dict[tuple[int, int], subprocess.Popen[bytes]] = {}
        self.killed: dict[tuple[int, int], str] = {}

    def start(self, worker: int, hold_after: int | None) -> None:
        key = (worker, 0)
        config = dict(self.config, worker=worker, incarnation=0, hold_after=hold_after)
        self.procs[key] = spawn_worker("kaudit.probe.share.worker", config,
                                       self.run_dir / f"w{worker}-i0.err")

    def kill_holders(self) -> list[str]:
        """SIGKILL every worker that says it holds its locks; what was done, said."""
        said = []
        for (worker, incarnation), proc in self.procs.items():
            if (worker, incarnation) in self.killed or proc.poll() is not None:
                continue
            if (self.run_dir / holding_name(worker, incarnation)).exists():
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait()
                self.killed[(worker, incarnation)] = KILLED
                said.append(f"worker {worker} {KILLED}")
        return said

    def died(self) -> list[str]:
        """Workers that ended on their own (a client error): with their last error line."""
        out = []
        for (worker, incarnation), proc in self.procs.items():
            if proc.poll() not in (None, 0) and (worker, incarnation) not in self.killed:
                err = (self.run_dir / f"w{worker}-i{incarnation}.err").read_text(
                    errors="replace").strip().splitlines()
                out.append(f"worker {worker} exited {proc.returncode}"
                           + (f": {err[-1][:200]}" if err else ""))
        return out

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = Deadline(STOP_WAIT_S)
        for proc in self.procs.values():
            try:
                proc.wait(max(0.1, deadline.left()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def events(self) -> list[Event]:
        found: list[Event] = []
        for worker, incarnation in self.procs:
            path = self.run_dir / journal_name(worker, incarnation)
            if path.exists():
                found.extend(e for line in path.read_text().splitlines()
                             if (e := parse_event(line)) is not None)
        return found


def settled(events: list[Event], written: set[int], settings: ShareSettings, limit: int,
            killed: dict[tuple[int, int], str]) -> bool:
    """Every record at its end: processed with its last processing's acceptance committed,
    rejected, or (poison) delivered the limit."""
    result = verify(written, events, settings.mix, limit, killed, None)
    if any(a.fate in (Fate.never_delivered, Fate.unsettled) for a in result.accounts):
        return False
    accepted = {(e.seq, e.delivery_count) for e in events if e.action == Action.accepted}
    last: dict[int, int] = {}
    for e in events:
        if e.action == Action.processed:
            last[e.seq] = max(last.get(e.seq, 0), e.delivery_count)
    return all((seq, d) in accepted for seq, d in last.items())


def _write(conn: ConnectionSettings, topic: str, run: str, settings: ShareSettings
           ) -> set[int]:
    """Write the records; the sequence numbers the brokers acknowledged."""
    acked: set[int] = set()
    producer = new_producer(conn, None, **{"acks": "all", "enable.idempotence": True})

    def on_delivery(err: Any, msg: Any) -> None:
        if err is None:
            acked.add(int(msg.value().split()[2]))

    for seq in range(settings.count):
        while True:
            try:
                producer.produce(topic, value=record_value(run, seq),
                                 partition=seq % settings.partitions, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.1)
    left = producer.flush(conn.timeout * 3)
    if left:
        raise ConnectionFailure(f"{left} record(s) of {topic} not acknowledged within "
                                f"{conn.timeout * 3:g}s")
    return acked


def run_share(conn: ConnectionSettings, settings: ShareSettings,
              interrupted: threading.Event) -> ShareReport:
    """One run, its topic deleted at the end unless kept."""
    started = time.monotonic()
    session = AdminSession(conn)
    run = uuid.uuid4().hex[:12]
    topic = group = f"kaudit-share-{run}"
    create_probe_topic(session, TopicSpec(topic, settings.partitions,
                                          settings.replication_factor, None, None))
    notes: list[str] = []
    run_dir = Path(tempfile.mkdtemp(prefix="kaudit-share-"))
    workers = Workers({"bootstrap": conn.bootstrap_servers, "properties": dict(conn.properties),
                       "timeout": conn.timeout, "run": run, "topic": topic, "group": group,
                       "run_dir": str(run_dir),
                       "mix": {"release": settings.mix.release, "reject": settings.mix.reject,
                               "poison": settings.mix.poison}}, run_dir)
    deleted = False
    try:
        configs = {"share.auto.offset.reset": "earliest"}
        if settings.lock_ms is not None:
            configs["share.record.lock.duration.ms"] = str(settings.lock_ms)
        if settings.delivery_limit is not None:
            configs["share.delivery.count.limit"] = str(settings.delivery_limit)
        set_group_configs(session, group, configs)
        limit = delivery_limit(session, group)
        written = _write(conn, topic, run, settings)
        for w in range(settings.workers):
            workers.start(w, settings.hold_after if settings.kill_worker else None)
        deadline, done = Deadline(settings.settle_s), False
        while not deadline.expired() and not interrupted.is_set():
            notes.extend(workers.kill_holders())
            if settled(workers.events(), written, settings, limit, workers.killed):
                done = True
                break
            time.sleep(0.5)
        notes.extend(workers.died())
        if not done:
            notes.append(f"not every record reached its end within {settings.settle_s:g}s")
    finally:
        workers.stop()
        events = workers.events()
        if not settings.keep:
            deleted = delete_probe_topic(session, topic)
            shutil.rmtree(run_dir, ignore_errors=True)  # the journals, read above
    result = verify(written, events, settings.mix, limit, workers.killed, settings.expect)
    if settings.keep:
        notes.append(f"kept: topic and group {topic}; journals in {run_dir}")
    return ShareReport(run_id=run, topic=topic, group=group, settings=settings,
                       written=len(written), delivery_limit=limit, verification=result,
                       killed=sorted(f"worker {w}: {how}" for (w, _), how in
                                     workers.killed.items()),
                       notes=notes, settled=done, seconds=time.monotonic() - started,
                       topic_deleted=deleted)
