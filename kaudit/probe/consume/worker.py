"""One consumer worker process of ``kaudit probe consume`` (``python -m`` this module).

It reads its settings as one JSON object on stdin (the connection's secrets never reach
argv or the environment), joins the group and processes batches with its commit strategy
until SIGTERM, writing every step to its journal (:mod:`~kaudit.probe.consume.journal`).

SIGUSR1 asks it to crash at its next crash point, the moment between its strategy's two
steps (:data:`CRASH_POINTS`): it writes a ``K`` line and SIGKILLs itself, which is what a
kill -9 at that moment does (nothing is flushed, closed or committed on the way out).
"""

from __future__ import annotations

import faulthandler
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kaudit.cluster import client
from kaudit.connection.settings import ConnectionSettings
from kaudit.probe.consume.journal import JournalWriter, journal_name

#: Where each strategy's crash point sits: between its two steps.
CRASH_POINTS = {
    "before-process": "after-commit-before-process",
    "after-process": "after-process-before-commit",
    "auto": "after-process-before-auto-commit",
    "transactional": "after-send-offsets-before-commit",
    "sink-offsets": "after-write-before-commit",
}
#: The worker exits with this when its client hit an error no retry fixes (e.g. fenced):
#: the runner restarts it, as an orchestrator would.
EXIT_FATAL = 3
#: ... and with this when a client call outlived its own timeout by :data:`GRACE_S`.
EXIT_STUCK = 4
GRACE_S = 5.0
"""How long past its timeout a blocking client call may run before the worker gives up."""


class Watchdog:
    """Ends the process when a blocking client call runs :data:`GRACE_S` past its own
    timeout, as a liveness probe would. librdkafka's send_offsets_to_transaction can block
    for good while the group coordinator is down (librdkafka issues 5456 and 5511, open in
    2.16), and a member stuck in it stalls the whole group's rebalance. The runner starts
    a new incarnation, whose init_transactions aborts the transaction left open."""

    def __init__(self, who: str) -> None:
        self.who = who

    def call(self, name: str, timeout: float, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args, timeout)``, watched."""
        timer = threading.Timer(timeout + GRACE_S, self._expire, args=(name, timeout))
        timer.daemon = True
        timer.start()
        try:
            return fn(*args, timeout)
        finally:
            timer.cancel()

    def _expire(self, name: str, timeout: float) -> None:
        print(f"{self.who}: {name} did not return within {GRACE_S:g} s of its {timeout:g} s "
              "timeout; exiting to be restarted", file=sys.stderr, flush=True)
        faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
        os._exit(EXIT_STUCK)


class Worker:
    """The poll-process-commit loop of one incarnation."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.cfg = config
        self.strategy: str = config["strategy"]
        self.worker: int = config["worker"]
        self.incarnation: int = config["incarnation"]
        self.topic: str = config["topic"]
        self.conn = ConnectionSettings(config["bootstrap"], dict(config["properties"]),
                                       float(config["timeout"]))
        run_dir = Path(config["run_dir"])
        self.journal = JournalWriter(run_dir / journal_name(self.worker, self.incarnation))
        self.crash_pending = False
        self.stopping = False
        self.sink: Any = None
        self.errors: Any = None
        self.producer: Any = None
        self.consumer: Any = None
        self.watchdog = Watchdog(f"worker {self.worker}.{self.incarnation}")

    # --- signals --------------------------------------------------------------------------

    def install_signals(self) -> None:
        signal.signal(signal.SIGUSR1, lambda *_: setattr(self, "crash_pending", True))
        signal.signal(signal.SIGTERM, lambda *_: setattr(self, "stopping", True))
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the runner handles Ctrl-C
        # A worker that does not stop when told writes where it is stuck to its .err file
        # (the runner sends SIGUSR2 before it kills it; --keep keeps the file).
        faulthandler.register(signal.SIGUSR2, file=sys.stderr, all_threads=True)

    def crash_point(self) -> None:
        if self.crash_pending and not self.stopping:
            self.journal.crashing(CRASH_POINTS[self.strategy])
            os.kill(os.getpid(), signal.SIGKILL)

    # --- clients --------------------------------------------------------------------------

    def open(self) -> None:
        cfg = self.cfg
        extra: dict[str, Any] = {
            "group.id": cfg["group"],
            "enable.auto.commit": self.strategy == "auto",
            "auto.offset.reset": "earliest",
            "session.timeout.ms": cfg["session_timeout_ms"],
            "heartbeat.interval.ms": max(100, cfg["session_timeout_ms"] // 6),
            "isolation.level": "read_committed",
        }
        if self.strategy == "auto":
            extra["auto.commit.interval.ms"] = cfg["auto_commit_ms"]
            extra["on_commit"] = self._on_auto_commit
        if cfg["static_membership"]:
            extra["group.instance.id"] = f"{cfg['group']}-w{self.worker}"
        self.errors = client.ErrorCollector()
        self.consumer = client.new_consumer(self.conn, self.errors, **extra)
        if self.strategy == "transactional":
            self.producer = client.new_producer(self.conn, **{
                "transactional.id": f"{cfg['group']}-w{self.worker}",
                "enable.idempotence": True, "acks": "all",
                "transaction.timeout.ms": cfg["transaction_timeout_ms"]})
            # Fences the previous incarnation and aborts the transaction it left open.
            self.watchdog.call("init_transactions", self.conn.timeout * 3,
                               self.producer.init_transactions)
        if self.strategy == "sink-offsets":
            from kaudit.probe.consume.sink import SinkTarget, SinkWriter

            self.sink = SinkWriter(SinkTarget(**cfg["sink"]))
            self.consumer.subscribe([self.topic], on_assign=self._seek_to_sink)
        else:
            self.consumer.subscribe([self.topic])

    def _seek_to_sink(self, consumer: Any, partitions: list[Any]) -> None:
        stored = self.sink.stored([tp.partition for tp in partitions])
        for tp in partitions:
            if tp.partition in stored:
                tp.offset = stored[tp.partition]
        consumer.assign(partitions)

    def _on_auto_commit(self, err: Any, partitions: list[Any]) -> None:
        if err is None:
            for tp in partitions:
                if tp.error is None and tp.offset >= 0:
                    self.journal.committed(tp.partition, tp.offset)

    # --- the loop -------------------------------------------------------------------------

    def run(self) -> int:
        self.journal.started()
        step = {"before-process": self._before_process, "after-process": self._after_process,
                "auto": self._auto, "transactional": self._transactional,
                "sink-offsets": self._sink_offsets}[self.strategy]
        try:
            self.open()
            while not self.stopping and os.getppid() == self.cfg["parent_pid"]:
                messages = self.consumer.consume(num_messages=self.cfg["batch"], timeout=0.2)
                self._give_up_when_fatal()
                batch: dict[int, list[int]] = {}
                for m in messages:
                    error = m.error()
                    if error is None:
                        batch.setdefault(m.partition(), []).append(m.offset())
                    elif client.is_fatal(error):
                        # e.g. a static member fenced after the coordinator moved: this
                        # client is finished; the runner starts a new incarnation.
                        raise client.KafkaException(error)
                if not batch:
                    continue
                for p, offsets in sorted(batch.items()):
                    self.journal.polled(p, offsets)
                step(batch)
        except client.KafkaException as exc:
            print(f"worker {self.worker}.{self.incarnation}: {client.kafka_message(exc)}",
                  file=sys.stderr)
            return EXIT_FATAL
        self.consumer.close()  # auto: commits what was stored; others: leaves the group
        if self.producer is not None:
            self.producer.flush(self.conn.timeout)
        self.journal.stopped()
        return 0

    def _give_up_when_fatal(self) -> None:
        """A fatal client error (e.g. a static member fenced after the coordinator moved,
        reported through the error callback) ends this incarnation: the runner starts
        a new one, which rejoins with the same group.instance.id."""
        fatal = self.errors.first_fatal()
        if fatal is not None:
            raise client.KafkaException(fatal)

    def _process(self, batch: dict[int, list[int]]) -> None:
        """The work: --process-ms of it, then one ledger line per partition."""
        time.sleep(self.cfg["process_ms"] / 1000)
        for p, offsets in sorted(batch.items()):
            self.journal.processed(p, offsets)

    def _commit(self, batch: dict[int, list[int]]) -> bool:
        tps = [client.TopicPartition(self.topic, p, offsets[-1] + 1)
               for p, offsets in sorted(batch.items())]
        try:
            self.consumer.commit(offsets=tps, asynchronous=False)
        except client.KafkaException as exc:
            # A rebalance took the partitions: the new owner starts at the last commit.
            print(f"worker {self.worker}.{self.incarnation}: commit refused: "
                  f"{client.kafka_message(exc)}", file=sys.stderr)
            return False
        for tp in tps:
            self.journal.committed(tp.partition, tp.offset)
        return True

    def _before_process(self, batch: dict[int, list[int]]) -> None:
        if not self._commit(batch):
            return  # not ours any more: whoever has the partitions processes it
        self.crash_point()
        self._process(batch)

    def _after_process(self, batch: dict[int, list[int]]) -> None:
        self._process(batch)
        self.crash_point()
        self._commit(batch)

    def _auto(self, batch: dict[int, list[int]]) -> None:
        self._process(batch)
        self.crash_point()

    def _transactional(self, batch: dict[int, list[int]]) -> None:
        producer, out = self.producer, self.cfg["output_topic"]
        producer.begin_transaction()
        try:
            for p, offsets in sorted(batch.items()):
                for o in offsets:
                    producer.produce(out, value=f"{p} {o} {self.worker} {self.incarnation}",
                                     partition=p)
            time.sleep(self.cfg["process_ms"] / 1000)
            positions = [client.TopicPartition(self.topic, p, offsets[-1] + 1)
                         for p, offsets in sorted(batch.items())]
            self.watchdog.call("send_offsets_to_transaction", self.conn.timeout,
                               producer.send_offsets_to_transaction, positions,
                               self.consumer.consumer_group_metadata())
            self.crash_point()
            self.watchdog.call("commit_transaction", self.conn.timeout * 3,
                               producer.commit_transaction)
        except client.KafkaException as exc:
            error = exc.args[0]
            if not error.txn_requires_abort():
                raise
            # e.g. the group moved on (a rebalance): drop the batch, read again from the
            # group's committed offsets.
            print(f"worker {self.worker}.{self.incarnation}: transaction aborted: "
                  f"{error.str()}", file=sys.stderr)
            self.watchdog.call("abort_transaction", self.conn.timeout * 3,
                               producer.abort_transaction)
            self._rewind_to_committed()
            return
        for p, offsets in sorted(batch.items()):
            self.journal.processed(p, offsets)
            self.journal.committed(p, offsets[-1] + 1)

    def _rewind_to_committed(self) -> None:
        assignment = self.consumer.assignment()
        if not assignment:
            return
        for tp in self.consumer.committed(assignment, timeout=self.conn.timeout):
            if tp.offset >= 0:
                self.consumer.seek(tp)

    def _sink_offsets(self, batch: dict[int, list[int]]) -> None:
        time.sleep(self.cfg["process_ms"] / 1000)
        written, rewind = self.sink.write(batch, self.worker, self.incarnation,
                                          self.crash_point)
        for p, offsets in written.items():
            self.journal.processed(p, offsets)
            self.journal.committed(p, offsets[-1] + 1)
        for p, at in rewind.items():
            self.consumer.seek(client.TopicPartition(self.topic, p, at))


def main(read: Callable[[], str] = sys.stdin.read) -> int:
    """Read the settings from stdin, run until SIGTERM."""
    worker = Worker(json.loads(read()))
    worker.install_signals()
    return worker.run()


if __name__ == "__main__":
    sys.exit(main())
