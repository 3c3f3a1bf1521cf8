"""The send ledger: how every probe send ended, in about 10 bytes per message.

Per partition, three growable :mod:`array` columns indexed by partition sequence:

- ``offsets`` (``'q'``, 8 bytes): the acknowledged offset, ``-1`` when there is none (not
  acked yet, failed, indeterminate, or acked with ``acks=0``, where the broker never tells
  the offset: librdkafka then reports ``OFFSET_INVALID``, -1001, which is stored as -1);
- ``outcome`` (``'B'``, 1 byte): a :class:`SendOutcome`;
- ``aborted`` (``'B'``, 1 byte): 1 when the send was part of a transaction aborted on
  purpose, so its absence is expected and its presence is an aborted read.

The leader epoch an acknowledgement reports is kept beside them in runs of consecutive
sequences (:class:`~kaudit.probe.epochs.EpochRuns`): nothing per message, and nothing at all
while the client reports none (librdkafka reports a leader epoch to consumers only).

Error names are tallied in dicts (by name), never per message. Counts are kept up to date
on every change, so reading them is O(1).

Every send has exactly one outcome. A later answer replaces an earlier one (a delivery
report that arrives after :meth:`Ledger.finish` turns an indeterminate send into acked or
failed); the outcome counts follow, while the per-name tallies keep counting reports as
they arrived.

:func:`classify_error` decides, from a delivery error's name, whether a send surely did not
happen (failed) or may have happened (indeterminate). kaudit never calls a maybe-written
message failed, and never counts a timeout as a loss.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Iterable
from enum import IntEnum

from kaudit.probe.epochs import EpochRuns

NO_OFFSET = -1
"""Stored offset of a send that has no known acknowledged offset."""

NO_ANSWER = "no answer"
"""Indeterminate reason given by :meth:`Ledger.finish` to sends that never got a report."""


class SendOutcome(IntEnum):
    """How a send ended (values are what the ledger stores, one byte each)."""

    pending = 0
    acked = 1
    failed = 2
    indeterminate = 3


# --- error classification ----------------------------------------------------------------

# The broker refused the request before appending it, or the client never sent it. Each of
# these answers the (last) attempt with "not written".
_DEFINITE_FAILURES: dict[str, str] = {
    # client side: the message never left the client
    "_QUEUE_FULL": "the client's send queue was full; the message was never handed over",
    "_MSG_SIZE_TOO_LARGE": "the client refused a message above message.max.bytes",
    "_UNKNOWN_PARTITION": "the client does not know the partition; nothing was sent",
    "_UNKNOWN_TOPIC": "the client does not know the topic; nothing was sent",
    "_INVALID_ARG": "the client rejected the produce call's arguments",
    "_PURGE_QUEUE": "purged from the client's queue before it was sent",
    "_KEY_SERIALIZATION": "the key could not be serialized; nothing was sent",
    "_VALUE_SERIALIZATION": "the value could not be serialized; nothing was sent",
    # broker side: validation before the append
    "NOT_ENOUGH_REPLICAS": "the ISR was below min.insync.replicas; checked before appending",
    "MSG_SIZE_TOO_LARGE": "the batch exceeded the broker's size limit; rejected before append",
    "MESSAGE_TOO_LARGE": "the batch exceeded the broker's size limit; rejected before append",
    "RECORD_LIST_TOO_LARGE": "the batch exceeded the segment size; rejected before append",
    "INVALID_RECORD": "the broker's record validation rejected the batch",
    "CORRUPT_MESSAGE": "the CRC check failed on the broker; rejected before append",
    "INVALID_TIMESTAMP": "the timestamp was out of range; rejected before append",
    "INVALID_REQUIRED_ACKS": "the acks value is invalid; rejected before append",
    "INVALID_TOPIC_EXCEPTION": "the topic name is invalid (or an internal topic)",
    "UNKNOWN_TOPIC_OR_PART": "the broker does not host the partition",
    "UNKNOWN_TOPIC_OR_PARTITION": "the broker does not host the partition",
    "TOPIC_AUTHORIZATION_FAILED": "no WRITE permission on the topic",
    "CLUSTER_AUTHORIZATION_FAILED": "no permission for idempotent writes on the cluster",
    "TRANSACTIONAL_ID_AUTHORIZATION_FAILED": "no permission on the transactional id",
    "POLICY_VIOLATION": "a broker policy rejected the request",
    "UNSUPPORTED_FOR_MESSAGE_FORMAT": "the log's message format cannot hold the batch",
    "UNSUPPORTED_COMPRESSION_TYPE": "the broker does not accept the compression type",
    "UNSUPPORTED_VERSION": "the broker does not support the request version",
    "INVALID_PRODUCER_EPOCH": "a newer producer epoch fenced this one; batch rejected",
    "PRODUCER_FENCED": "a newer producer instance fenced this one; batch rejected",
    "INVALID_TXN_STATE": "the transaction was not in a state to accept writes",
    "INVALID_PRODUCER_ID_MAPPING": "the transactional id has no producer id; batch rejected",
}

# The write may have happened: the request reached (or may have reached) the leader and
# the answer was lost, late, or says the append happened without full replication.
_INDETERMINATE: dict[str, str] = {
    "_MSG_TIMED_OUT": "message.timeout.ms expired, possibly while the request was in flight",
    "_TIMED_OUT": "a client timeout; the request may have reached the broker",
    "_TIMED_OUT_QUEUE": "timed out in a client queue after earlier attempts may have been sent",
    "REQUEST_TIMED_OUT": "the leader appended but timed out waiting for the ISR",
    "NOT_ENOUGH_REPLICAS_AFTER_APPEND": "appended on the leader; the ISR shrank before acking",
    "NETWORK_EXCEPTION": "the connection broke; the request may have been processed",
    "_TRANSPORT": "the connection broke; the request may have been processed",
    "_ALL_BROKERS_DOWN": "every connection was down; earlier attempts may have landed",
    "_PURGE_INFLIGHT": "purged while in flight; the broker may have appended it",
    "_DESTROY": "the client was destroyed with the message outstanding",
    "_FATAL": "a fatal producer error failed every outstanding message, some in flight",
    "_FENCED": "the producer was fenced while messages were in flight",
    "_INCONSISTENT": "the idempotent producer lost track of its sequence state",
    "_GAPLESS_GUARANTEE": "the idempotent producer could not keep its ordering guarantee",
    "OUT_OF_ORDER_SEQUENCE_NUMBER": "the broker lost earlier batches' state; this may be a retry",
    "DUPLICATE_SEQUENCE_NUMBER": "the broker already had this batch: it was written",
    "UNKNOWN_PRODUCER_ID": "the broker forgot the producer's state; an earlier attempt may exist",
    "KAFKA_STORAGE_ERROR": "the leader's log directory failed during the request",
    "NOT_LEADER_OR_FOLLOWER": "after retries: an earlier attempt may have reached the old leader",
    "NOT_LEADER_FOR_PARTITION": "after retries: an earlier attempt may have reached the old leader",
    "LEADER_NOT_AVAILABLE": "after retries: an earlier attempt may have reached the old leader",
    "UNKNOWN": "the broker hit an unexpected error mid-request",
}


def classify_error(error_name: str) -> SendOutcome:
    """Failed or indeterminate, from a delivery error's name (``KafkaError.name()``).

    *Failed* is reserved for answers that say "not written": the client never sent the
    message (queue full, size, unknown partition, purged from the queue) or the broker
    refused the request while validating it, before appending (NOT_ENOUGH_REPLICAS is
    checked before the append, unlike NOT_ENOUGH_REPLICAS_AFTER_APPEND; size, record,
    topic and authorization errors likewise).

    Everything else is *indeterminate*: timeouts (client or broker), broken connections,
    appends that were not fully replicated, fenced or fatal producers, in-flight purges,
    leadership errors after retries, and every name not listed here. A timeout is never a
    loss: the verifier reads the log to learn what became of an indeterminate send.

    Caveat, by design measured rather than assumed: a delivery error describes the *last*
    attempt. With retries, an earlier attempt whose answer was lost may have been written
    even though the last one was refused; the verifier reports such sends as
    ``failed_present``.

    Names are matched case-insensitively; a ``KafkaError.`` prefix is ignored.
    """
    name = error_name.strip().upper().removeprefix("KAFKAERROR.")
    if name in _DEFINITE_FAILURES:
        return SendOutcome.failed
    return SendOutcome.indeterminate


def explain_error(error_name: str) -> str:
    """One line saying why ``error_name`` is classified the way it is."""
    name = error_name.strip().upper().removeprefix("KAFKAERROR.")
    if name in _DEFINITE_FAILURES:
        return _DEFINITE_FAILURES[name]
    return _INDETERMINATE.get(name, "unknown error: the write may have happened")


# --- the ledger --------------------------------------------------------------------------

_ACKED = int(SendOutcome.acked)
_FAILED = int(SendOutcome.failed)
_INDETERMINATE_V = int(SendOutcome.indeterminate)
_PENDING = int(SendOutcome.pending)


class Ledger:
    """Every send's outcome, per partition, indexed by partition sequence.

    Not thread-safe by itself: the producer updates it from one thread (librdkafka
    delivers reports from ``poll()``/``flush()`` on the caller's thread).
    """

    def __init__(self, partitions: int) -> None:
        if partitions < 1:
            raise ValueError(f"a ledger needs at least one partition, got {partitions}")
        self._n = partitions
        self._offsets = [array("q") for _ in range(partitions)]
        self._outcome = [array("B") for _ in range(partitions)]
        self._aborted = [array("B") for _ in range(partitions)]
        # per partition: counts indexed by SendOutcome value. The pending slot holds minus
        # the sends answered so far (so next_seq stays cheap): pending = allocated + slot.
        self._pcounts = [[0, 0, 0, 0] for _ in range(partitions)]
        self._paborted = [0] * partitions
        self._first_acked = [NO_OFFSET] * partitions
        self._last_acked = [NO_OFFSET] * partitions
        self._epochs: dict[int, EpochRuns] = {}
        self._errors: dict[str, int] = {}
        self._reasons: dict[str, int] = {}
        self._finished = False

    # -- writing --------------------------------------------------------------------------

    def next_seq(self, partition: int) -> int:
        """Allocate the next sequence of ``partition`` (outcome pending) and return it."""
        offsets = self._offsets[partition]
        seq = len(offsets)
        offsets.append(NO_OFFSET)
        self._outcome[partition].append(_PENDING)
        self._aborted[partition].append(0)
        return seq

    def next_seq_peek(self, partition: int) -> int:
        """The sequence :meth:`next_seq` would allocate next, without allocating it."""
        return len(self._offsets[partition])

    def _set(self, partition: int, seq: int, outcome: int) -> None:
        if seq < 0:
            raise IndexError(f"negative sequence {seq}")
        column = self._outcome[partition]
        old = column[seq]
        column[seq] = outcome
        counts = self._pcounts[partition]
        counts[old] -= 1
        counts[outcome] += 1

    def acked(self, partition: int, seq: int, offset: int | None,
              epoch: int | None = None) -> None:
        """The broker acknowledged ``seq`` at ``offset`` (None or negative: offset unknown,
        as with acks=0, where librdkafka reports no offset at all), in leader ``epoch``
        (None or negative: not reported)."""
        if seq < 0:
            raise IndexError(f"negative sequence {seq}")
        if epoch is not None and epoch >= 0:
            runs = self._epochs.get(partition)
            if runs is None:
                runs = self._epochs[partition] = EpochRuns()
            runs.note(seq, epoch)
        if offset is None or offset < 0:
            offset = NO_OFFSET
        else:
            if offset > self._last_acked[partition]:
                self._last_acked[partition] = offset
            first = self._first_acked[partition]
            if first == NO_OFFSET or offset < first:
                self._first_acked[partition] = offset
        self._offsets[partition][seq] = offset
        column = self._outcome[partition]
        old = column[seq]
        column[seq] = _ACKED
        counts = self._pcounts[partition]
        counts[old] -= 1
        counts[_ACKED] += 1

    def failed(self, partition: int, seq: int, error_name: str) -> None:
        """``seq`` surely was not written (see :func:`classify_error`)."""
        self._set(partition, seq, _FAILED)
        self._offsets[partition][seq] = NO_OFFSET
        self._errors[error_name] = self._errors.get(error_name, 0) + 1

    def indeterminate(self, partition: int, seq: int, reason: str) -> None:
        """``seq`` may or may not have been written (a timeout, a lost answer...)."""
        self._set(partition, seq, _INDETERMINATE_V)
        self._offsets[partition][seq] = NO_OFFSET
        self._reasons[reason] = self._reasons.get(reason, 0) + 1

    def mark_aborted(self, partition: int, seqs: range | Iterable[int]) -> None:
        """These sends belonged to a transaction aborted on purpose."""
        column = self._aborted[partition]
        n = len(column)
        if isinstance(seqs, range) and seqs.step == 1:
            start, stop = max(seqs.start, 0), min(seqs.stop, n)
            if stop <= start:
                return
            before = column[start:stop].count(1)
            column[start:stop] = array("B", b"\x01" * (stop - start))
            self._paborted[partition] += (stop - start) - before
            return
        for seq in seqs:
            if seq < 0 or seq >= n:
                raise IndexError(f"sequence {seq} was never allocated in partition {partition}")
            if not column[seq]:
                column[seq] = 1
                self._paborted[partition] += 1

    def finish(self) -> int:
        """Turn every still-pending send into indeterminate ("no answer"); return how many."""
        done = 0
        for partition, column in enumerate(self._outcome):
            pending = self._pending(partition)
            if not pending:
                continue
            raw = column.tobytes()
            index = raw.find(b"\x00")
            while index >= 0:
                column[index] = _INDETERMINATE_V
                index = raw.find(b"\x00", index + 1)
            counts = self._pcounts[partition]
            counts[_INDETERMINATE_V] += pending
            counts[_PENDING] -= pending
            done += pending
        if done:
            self._reasons[NO_ANSWER] = self._reasons.get(NO_ANSWER, 0) + done
        self._finished = True
        return done

    # -- reading --------------------------------------------------------------------------

    @property
    def partitions(self) -> int:
        """Number of partitions (partition ids are ``0 .. partitions - 1``)."""
        return self._n

    @property
    def finished(self) -> bool:
        """Whether :meth:`finish` was called."""
        return self._finished

    def allocated(self, partition: int) -> int:
        """How many sequences ``partition`` has allocated (sent or about to be)."""
        return len(self._offsets[partition])

    def outcome(self, partition: int, seq: int) -> SendOutcome:
        """The current outcome of one send."""
        return SendOutcome(self._outcome[partition][seq])

    def offset(self, partition: int, seq: int) -> int:
        """The acknowledged offset of one send, -1 when none is known."""
        return self._offsets[partition][seq]

    def is_aborted(self, partition: int, seq: int) -> bool:
        """Whether the send was in a transaction aborted on purpose."""
        return bool(self._aborted[partition][seq])

    def columns(self, partition: int) -> tuple[array[int], array[int], array[int]]:
        """The live ``(offsets, outcome, aborted)`` columns of a partition. Read only."""
        return self._offsets[partition], self._outcome[partition], self._aborted[partition]

    def last_acked_offset(self, partition: int) -> int:
        """The highest acknowledged offset in ``partition``, -1 when none.

        The consumer drains each partition past this offset before verifying.
        """
        return self._last_acked[partition]

    def first_acked_offset(self, partition: int) -> int:
        """The lowest acknowledged offset in ``partition``, -1 when none."""
        return self._first_acked[partition]

    def acked_epochs(self, partition: int, seqs: list[int]) -> list[int | None]:
        """The leader epoch each of ``seqs`` was acknowledged in, None where the
        acknowledgement reported none."""
        runs = self._epochs.get(partition)
        return runs.epochs_of(seqs) if runs is not None else [None] * len(seqs)

    def _pending(self, partition: int) -> int:
        return len(self._offsets[partition]) + self._pcounts[partition][_PENDING]

    def partition_counts(self, partition: int) -> dict[str, int]:
        """``sent``, ``acked``, ``failed``, ``indeterminate``, ``pending``, ``aborted``."""
        counts = self._pcounts[partition]
        return {"sent": len(self._offsets[partition]), "acked": counts[_ACKED],
                "failed": counts[_FAILED], "indeterminate": counts[_INDETERMINATE_V],
                "pending": self._pending(partition), "aborted": self._paborted[partition]}

    def counts(self) -> dict[str, int]:
        """Totals over all partitions, the same keys as :meth:`partition_counts`.

        ``acked`` includes sends later marked aborted (the broker did acknowledge them);
        ``aborted`` counts those separately.
        """
        return {
            "sent": self.sent,
            "acked": sum(c[_ACKED] for c in self._pcounts),
            "failed": sum(c[_FAILED] for c in self._pcounts),
            "indeterminate": sum(c[_INDETERMINATE_V] for c in self._pcounts),
            "pending": sum(self._pending(p) for p in range(self._n)),
            "aborted": sum(self._paborted),
        }

    @property
    def sent(self) -> int:
        """Sequences allocated over all partitions."""
        return sum(len(column) for column in self._offsets)

    @property
    def failed_by_error(self) -> dict[str, int]:
        """How many ``failed`` reports each error name produced (a copy)."""
        return dict(self._errors)

    @property
    def indeterminate_by_reason(self) -> dict[str, int]:
        """How many ``indeterminate`` reports each reason produced (a copy)."""
        return dict(self._reasons)

    def nbytes(self) -> int:
        """Bytes held by the per-message columns, allocation slack and headers included."""
        return sum(sys.getsizeof(column)
                   for columns in (self._offsets, self._outcome, self._aborted)
                   for column in columns) + sum(r.nbytes() for r in self._epochs.values())
