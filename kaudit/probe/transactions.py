"""The probe's transactions: starting a session, ending a transaction, and what an end
that failed means for its sends (aborted, or an unknown outcome)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from kaudit.cluster import client
from kaudit.cluster.client import ErrorCollector, unreachable
from kaudit.connection.settings import ConnectionSettings
from kaudit.probe.ledger import Ledger
from kaudit.probe.monitor import EventLog
from kaudit.waiting import Deadline


@dataclass
class TransactionState:
    """The send loop's transactions: whether one is open and where it began."""

    open: bool = False
    starts: dict[int, int] = field(default_factory=dict)
    """Each partition's next sequence when the open transaction began."""
    index: int = 0
    """Transactions ended so far."""
    aborts: int = 0
    """Of which aborted on purpose."""


def init_transactions(producer: Any, conn: ConnectionSettings,
                      collector: ErrorCollector) -> None:
    """init_transactions, retried while the error is retriable (a coordinator moving)."""
    deadline = Deadline(max(3 * conn.timeout, 30))
    while True:
        try:
            producer.init_transactions(conn.timeout)
            return
        except client.KafkaException as exc:
            err = exc.args[0]
            if not err.retriable() or deadline.expired():
                raise unreachable(conn, collector, exc) from None
            time.sleep(0.5)


@dataclass(frozen=True)
class Ended:
    """How a transaction's end went."""

    known: bool
    """False when the outcome is unknown: a commit that failed, no abort after it."""
    fatal: Exception | None = None
    """A fatal error met on the way: the producer can do nothing more (a commit that
    failed so has an unknown outcome; an abort stays an abort: it can never commit)."""


def end_transaction(producer: Any, ledger: Ledger, starts: dict[int, int],
                    partitions: list[int], abort: bool, conn: ConnectionSettings,
                    log: EventLog, notes: list[str]) -> Ended:
    """Commit or abort the open transaction, and tell the ledger what became of it."""
    ends = {p: ledger.next_seq_peek(p) for p in partitions}
    try:
        if abort:
            # Flush first: the aborted records then really reach the log (so a
            # read_committed reader has something to hide), and EndTxn cannot
            # race a pending AddPartitionsToTxn (Kafka 4 answers that race with
            # a fatal INVALID_TXN_STATE).
            producer.flush(conn.timeout * 3)
            producer.abort_transaction(conn.timeout * 3)
        else:
            _commit(producer, Deadline(conn.timeout * 3))
            return Ended(True)
    except client.KafkaException as exc:
        err = exc.args[0]
        fatal = exc if client.is_fatal(err) else None
        notes.append(f"transaction {'abort' if abort else 'commit'} failed: {err.str()}")
        if not abort and fatal is None and err.txn_requires_abort():
            try:
                producer.abort_transaction(conn.timeout * 3)
            except client.KafkaException as again:
                notes.append(f"transaction abort failed: {again.args[0].str()}")
                return Ended(False, again if client.is_fatal(again.args[0]) else None)
        elif not abort:
            return Ended(False, fatal)  # neither surely aborted nor surely visible
        elif fatal is not None:
            _aborted(ledger, starts, ends, log, abort)
            return Ended(True, fatal)
    _aborted(ledger, starts, ends, log, abort)
    return Ended(True)


def _aborted(ledger: Ledger, starts: dict[int, int], ends: dict[int, int], log: EventLog,
             on_purpose: bool) -> None:
    for p, end in ends.items():
        ledger.mark_aborted(p, range(starts[p], end))
    log.add("note", "transaction aborted on purpose" if on_purpose else "transaction aborted")


def _commit(producer: Any, deadline: Deadline) -> None:
    """commit_transaction, called again while its error is retriable: the commit is then
    still under way, and any other transaction call would be refused (_CONFLICT)."""
    while True:
        try:
            producer.commit_transaction(max(deadline.left(), 0.1))
            return
        except client.KafkaException as exc:
            if not exc.args[0].retriable() or deadline.expired():
                raise
