"""Run one share-group probe: write sequenced records, run a share group of worker
processes over them (one may hold its locks and be killed), wait until every record has
reached its end, and account for each.

The data flows one way: settings -> topic (the records the brokers acknowledged) ->
workers (journals) -> events -> :func:`~kaudit.probe.share.verify.verify` -> report.
Broker faults come from the one fault model (:mod:`kaudit.probe.faults`): they strike once
``--fault-at`` of the records are processed, and the run waits for their heal before it
calls the records settled.
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
from kaudit.cluster.share_admin import (
    delivery_limit,
    group_coordinator,
    group_offsets,
    lock_duration_ms,
    set_group_configs,
    share_coordinator,
)
from kaudit.cluster.topics import TopicSpec, create_probe_topic, delete_probe_topic, partition_roles
from kaudit.connection.settings import ConnectionSettings
from kaudit.errors import ConnectionFailure
from kaudit.probe.faults.injector import FaultInjector, Targets, start_injector
from kaudit.probe.faults.lab import LabControl, lab_for
from kaudit.probe.faults.registry import fault_at_reached
from kaudit.probe.monitor import EventLog
from kaudit.probe.share.model import ShareReport, ShareSettings
from kaudit.probe.share.verify import (
    Action,
    Event,
    Fate,
    explain_undelivered,
    parse_event,
    per_second,
    verify,
)
from kaudit.probe.share.worker import holding_name, journal_name, record_value
from kaudit.probe.spawn import spawn_worker
from kaudit.waiting import Deadline

STOP_WAIT_S = 30.0
"""How long a worker may take to leave after SIGTERM."""
KILLED = "SIGKILLed while it held its records' locks"


class Workers:
    """The run's worker processes, each with its journal in ``run_dir``."""

    def __init__(self, config: dict[str, Any], run_dir: Path, log: EventLog) -> None:
        self.config, self.run_dir, self.log = config, run_dir, log
        self.procs: dict[tuple[int, int], subprocess.Popen[bytes]] = {}
        self.killed: dict[tuple[int, int], str] = {}

    def start(self, worker: int, settings: ShareSettings, lock_ms: int) -> None:
        key = (worker, 0)
        at = settings.hold_after
        config = dict(self.config, worker=worker, incarnation=0,
                      hold_after=at if settings.kill_worker else None,
                      slow_after=at if settings.slow_worker else None,
                      slow_max_s=settings.settle_s, processing_ms=settings.processing_ms,
                      lock_ms=lock_ms)
        self.procs[key] = spawn_worker("kaudit.probe.share.worker", config,
                                       self.run_dir / f"w{worker}-i0.err")

    def kill_holders(self) -> None:
        """SIGKILL every worker that says it holds its locks, and log it."""
        for (worker, incarnation), proc in self.procs.items():
            if (worker, incarnation) in self.killed or proc.poll() is not None:
                continue
            if (self.run_dir / holding_name(worker, incarnation)).exists():
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait()
                self.killed[(worker, incarnation)] = KILLED
                self.log.add("fault", f"worker {worker} {KILLED}")

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


def processed_share(events: list[Event], written: set[int]) -> float:
    """The share of the written records processed at least once (``--fault-at 30%``)."""
    done = {e.seq for e in events if e.action == Action.processed}
    return len(done & written) / max(1, len(written))


def settled(events: list[Event], written: set[int], settings: ShareSettings, limit: int,
            killed: dict[tuple[int, int], str]) -> bool:
    """Every record at its end as the journals tell: processed, rejected, or (poison)
    delivered the limit."""
    result = verify(written, events, settings.mix, limit, killed, None)
    return not any(a.fate in (Fate.never_delivered, Fate.unsettled) for a in result.accounts)


def unconfirmed(events: list[Event]) -> bool:
    """Whether some record's last processing has no committed acceptance journaled (its
    commit failed or went unanswered: the broker may have it or may deliver it again)."""
    accepted = {(e.seq, e.delivery_count) for e in events if e.action == Action.accepted}
    last: dict[int, int] = {}
    for e in events:
        if e.action == Action.processed:
            last[e.seq] = max(last.get(e.seq, 0), e.delivery_count)
    return any((seq, d) not in accepted for seq, d in last.items())


def over(events: list[Event], written: set[int], settings: ShareSettings, limit: int,
         killed: dict[tuple[int, int], str], broker: LagWatch | None) -> bool:
    """Whether every record is at its end: by the journals (processed and its acceptance
    confirmed, rejected, or archived), or else by the coordinator (nothing left to deliver:
    a record no worker has will never come, a record whose acceptance went unconfirmed was
    taken), once no record is in a worker's hands. ``broker`` None: the journals' word
    only."""
    result = verify(written, events, settings.mix, limit, killed, None)
    fates = {a.fate for a in result.accounts}
    if Fate.unsettled in fates:
        return False
    if Fate.never_delivered not in fates and not unconfirmed(events):
        return True
    return broker is not None and broker.done()


def _may_end(events: list[Event], written: set[int], settings: ShareSettings, limit: int,
             killed: dict[tuple[int, int], str], broker: LagWatch,
             injector: FaultInjector | None) -> bool:
    """Whether the run may end: every record :func:`over`, and its faults (if any) struck
    and healed. Until they strike, a run's records have met none, and only the journals
    may say they are over: a coordinator's "nothing left" would end a run before what it
    was asked to meet."""
    trusted = broker if injector is None or injector.struck() else None
    return over(events, written, settings, limit, killed, trusted) and (
        injector is None or not injector.under_way())


class LagWatch:
    """Whether the share group's coordinator says nothing is left to deliver or
    acknowledge (lag 0 on every partition), asked at most every :data:`ASK_EVERY_S`: what
    settles a record whose acceptance was not confirmed to its worker."""

    ASK_EVERY_S = 2.0

    def __init__(self, session: AdminSession, group: str, topic: str, partitions: int) -> None:
        self.session, self.group, self.topic = session, group, topic
        self.wanted = {(topic, p) for p in range(partitions)}
        self.asked_at = 0.0
        self.starts: dict[int, int | None] = {}
        """The share-partition start offsets the coordinator last gave."""

    def done(self) -> bool:
        if time.monotonic() - self.asked_at < self.ASK_EVERY_S:
            return False
        self.asked_at = time.monotonic()
        try:
            found = group_offsets(self.session, self.group)
        except Exception:  # a coordinator moving or down: ask again later
            return False
        mine = {(p.topic, p.partition): p for p in found if p.topic == self.topic}
        self.starts = {p.partition: p.start_offset for p in mine.values()}
        return self.wanted <= mine.keys() and all(mine[k].lag == 0 for k in self.wanted)


def _write(conn: ConnectionSettings, topic: str, run: str,
           records: list[tuple[int, int]]) -> dict[int, tuple[int, int]]:
    """Write ``records`` (sequence number, partition); each one the brokers acknowledged,
    with its partition and offset."""
    placed: dict[int, tuple[int, int]] = {}
    producer = new_producer(conn, None, **{"acks": "all", "enable.idempotence": True})

    def on_delivery(err: Any, msg: Any) -> None:
        if err is None:
            placed[int(msg.value().split()[2])] = (msg.partition(), msg.offset())

    for seq, partition in records:
        while True:
            try:
                producer.produce(topic, value=record_value(run, seq), partition=partition,
                                 on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.1)
    left = producer.flush(conn.timeout * 3)
    if left:
        raise ConnectionFailure(f"{left} record(s) of {topic} not acknowledged within "
                                f"{conn.timeout * 3:g}s")
    return placed


class LateRecords:
    """``share.auto.offset.reset=latest``: records written while the workers run, one per
    partition a second until each partition has had one processed. They show where the
    group began: the records written before it first fetched are never delivered, the late
    ones are; and the first acknowledged makes the coordinator persist the start offset."""

    EVERY_S = 1.0

    def __init__(self, conn: ConnectionSettings, topic: str, run: str,
                 settings: ShareSettings) -> None:
        self.conn, self.topic, self.run = conn, topic, run
        self.partitions = settings.partitions
        self.next_seq = settings.count
        self.written_at = 0.0
        self.placed: dict[int, tuple[int, int]] = {}

    def write(self, events: list[Event]) -> dict[int, tuple[int, int]]:
        """Write one more to each partition that has had none processed (at most every
        :data:`EVERY_S`); what was written."""
        done = {self.placed[e.seq][0] for e in events
                if e.action == Action.processed and e.seq in self.placed}
        waiting = [p for p in range(self.partitions) if p not in done]
        if not waiting or time.monotonic() - self.written_at < self.EVERY_S:
            return {}
        self.written_at = time.monotonic()
        records = [(self.next_seq + i, p) for i, p in enumerate(waiting)]
        self.next_seq += len(records)
        new = _write(self.conn, self.topic, self.run, records)
        self.placed.update(new)
        return new


def run_share(conn: ConnectionSettings, settings: ShareSettings,
              interrupted: threading.Event) -> ShareReport:
    """One run, its topic deleted at the end unless kept."""
    lab = lab_for(settings.faults, settings.lab_state_dir)  # none: exit 2 before any topic
    # What the run does to the group and the cluster (the injector's log too), timed from
    # now; the workers' journals, from the same moment in epoch ms.
    log, started_ms = EventLog(time.monotonic()), int(time.time() * 1000)
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
                               "poison": settings.mix.poison}}, run_dir, log)
    deleted, injector = False, None
    try:
        configs = {"share.auto.offset.reset": settings.auto_offset_reset}
        if settings.lock_ms is not None:
            configs["share.record.lock.duration.ms"] = str(settings.lock_ms)
        if settings.delivery_limit is not None:
            configs["share.delivery.count.limit"] = str(settings.delivery_limit)
        set_group_configs(session, group, configs)
        limit, lock_ms = delivery_limit(session, group), lock_duration_ms(session, group)
        placed = _write(conn, topic, run, [(seq, seq % settings.partitions)
                                           for seq in range(settings.count)])
        written = set(placed)
        late = LateRecords(conn, topic, run, settings) \
            if settings.auto_offset_reset == "latest" else None
        for w in range(settings.workers):
            workers.start(w, settings, lock_ms)
        progress = [0.0]
        if settings.faults:
            injector = _injector(session, settings, lab, log, topic, group, progress)
        deadline, done = Deadline(settings.settle_s), False
        broker = LagWatch(session, group, topic, settings.partitions)
        while not deadline.expired() and not interrupted.is_set():
            workers.kill_holders()
            events = workers.events()
            if late is not None:
                new = late.write(events)
                placed.update(new)
                written.update(new)
            progress[0] = processed_share(events, written)
            if _may_end(events, written, settings, limit, workers.killed, broker, injector):
                done = True
                break
            time.sleep(0.5)
        notes.extend(workers.died())
        if not done:
            notes.append(f"not every record reached its end within {settings.settle_s:g}s")
    finally:
        if injector is not None:  # healed: a broker left down would outlive the run
            notes.extend(f"fault: {e}" for e in injector.finish(settings.fault_duration + 150))
        workers.stop()
        events = workers.events()
        if not settings.keep:
            deleted = delete_probe_topic(session, topic)
            shutil.rmtree(run_dir, ignore_errors=True)  # the journals, read above
    result = verify(written, events, settings.mix, limit, workers.killed, settings.expect)
    if result.counts.get(Fate.never_delivered.value):
        explain_undelivered(result, placed, broker.starts, settings.auto_offset_reset)
    if late is not None and late.placed:
        notes.append(f"share.auto.offset.reset=latest: {len(late.placed)} record(s) written "
                     "while the workers ran (from sequence number "
                     f"{min(late.placed)}), to show where the group began")
    if settings.keep:
        notes.append(f"kept: topic and group {topic}; journals in {run_dir}")
    return ShareReport(run_id=run, topic=topic, group=group, settings=settings,
                       written=len(written), delivery_limit=limit, verification=result,
                       killed=sorted(f"worker {w}: {how}" for (w, _), how in
                                     workers.killed.items()),
                       notes=notes, settled=done, seconds=time.monotonic() - log.started,
                       topic_deleted=deleted, events=log.events(),
                       timeline=per_second(events, started_ms))


def _injector(session: AdminSession, settings: ShareSettings, lab: LabControl | None,
              log: EventLog, topic: str, group: str, progress: list[float]) -> FaultInjector:
    """The faults, aimed at partition 0's leader, the share group's coordinator and its
    partition 0's share coordinator, struck at ``--fault-at`` of the records processed."""
    started = time.monotonic()
    targets = Targets(lambda: partition_roles(session, topic),
                      coordinator=lambda: group_coordinator(session, group),
                      share_coordinator=lambda: share_coordinator(session, group, topic, 0))
    return start_injector(
        settings, lab, lambda: fault_at_reached(settings.fault_at, progress[0],
                                                time.monotonic() - started),
        log, targets, session, session.settings.timeout)
