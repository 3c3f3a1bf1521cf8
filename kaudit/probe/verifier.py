"""The verifier: what the read-back passes saw, against what the ledger says was sent.

Pure and streaming: the consumer calls :meth:`Verifier.observe` for every probe message of
this run it reads, partition by partition in offset order, then :meth:`Verifier.pass_done`;
a second, fresh consumer pass may follow. :meth:`Verifier.result` classifies every send.

Classes (each counted in sequences, per partition and in total; they are separate facts,
so one sequence can be in two classes, e.g. duplicated and reordered):

``lost``
    acked (and not aborted on purpose), and never seen in any pass.
``consumer_missed`` (alias ``lost_first_pass_only``)
    acked, missed by pass 1 but seen by a later pass: the consumer missed it, the log did
    not lose it.
``duplicated`` / ``duplicate_copies``
    a sequence seen at more than one distinct offset; the extra copies (the count saturates
    at 255 copies per sequence).
``reordered``
    a sequence seen for the first time after a higher sequence of the same partition was
    already seen: sequences, not pairs. A reorder alone never shows up as a loss or a
    duplicate (the late sequence is seen once, at its acked offset).
``inconsistent_offsets``
    an acked sequence with a known offset that was seen only at other offsets, or that was
    not seen while its acked offset held another message of this run.
``aborted_visible``
    sent in a transaction aborted on purpose, and seen.
``failed_present``
    reported failed (not written), and seen.
``indeterminate_present`` / ``indeterminate_absent``
    no definite answer (sends still pending count here too), and seen / not seen.
``unexpected``
    observations (pass 1) of a sequence the ledger never allocated, or of a partition it
    does not have: another writer reused the run id, or the ledger is wrong.

Passes: only pass 1 decides duplicates, reorders, inconsistent offsets and unexpected
messages. Later passes only rescue pass 1's misses (turning ``lost`` into
``consumer_missed``) and make failed, indeterminate and aborted sends "present". A second
pass that re-reads the same log cannot therefore double any count.

Re-deliveries: within a pass, an observation at an offset not above the last one observed
for that partition is the consumer re-reading a position it already passed (a rebalance, a
seek back); it is ignored and counted in ``redelivered``. Distinct offsets are what make a
duplicate.

Memory: two bytes per message beyond the ledger (a per-sequence sighting count saturating
at 255 and a flag byte: seen in pass 1, seen later, seen at its acked offset, reordered),
plus the per-partition highest sequence seen (for reorders). An observation whose offset
is not the sequence's acked offset (rare: further copies, anomalies, failed or
indeterminate sends that are present, or a send whose ack had not arrived yet) is kept as
an (offset, sequence) pair, 16 bytes, so that :meth:`Verifier.result` can resolve late
acks, tell which acked offsets hold another message, and show every sample's offsets.
With ``acks=0`` the broker reports no offsets: a first sighting is then not kept (a
duplicate's sample lists its further copies only), and inconsistent offsets cannot be
detected. No per-message dict.

The verifier reads the ledger's live columns: the consumer may run while the producer
still writes (an observation whose ack is not there yet is resolved at :meth:`result`),
but the ledger should be finished (:meth:`~kaudit.probe.ledger.Ledger.finish`) before
:meth:`result`; sends still pending then count as indeterminate.
"""

from __future__ import annotations

import sys
from array import array
from bisect import bisect_left
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from types import MappingProxyType
from typing import Any

from kaudit.probe.ledger import NO_OFFSET, Ledger, SendOutcome
from kaudit.probe.outcomes import CLASSES, COUNTS, OutcomeCounts
from kaudit.probe.payload import RUN_ID_BYTES, ProbeRecord

EXPECTATIONS = ("at-most-once", "at-least-once", "exactly-once")
"""Accepted ``--expect`` values (``None`` means no expectation)."""

# flag bits, one byte per sequence
_SEEN1 = 1  # seen in pass 1
_SEEN_LATER = 2  # seen in a later pass
_AT_ACKED = 4  # seen in pass 1 at its acked offset
_REORDERED = 8  # first seen in pass 1 after a higher sequence
_HEALTHY = _SEEN1 | _AT_ACKED | (int(SendOutcome.acked) << 4)
_SATURATED = 255
_ACKED_V = int(SendOutcome.acked)

_DUP_TABLE = bytes([0, 0] + [1] * 254)  # sighting count -> "seen at >= 2 offsets"
_EXCEPTION_TABLE = bytes(0 if key == _HEALTHY else 1 for key in range(256))

(_LOST, _MISSED, _DUP, _REORD, _INCONS, _ABORTED_VIS, _FAILED_PRES, _INDET_PRES,
 _INDET_ABS, _UNEXPECTED) = range(len(CLASSES))
_COPIES = len(CLASSES)  # index of duplicate_copies in a tally


@dataclass(frozen=True, slots=True)
class Sample:
    """One example of a class: where the sequence was acked and where it was seen."""

    partition: int
    sequence: int
    acked_offset: int | None
    seen_offsets: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"partition": self.partition, "sequence": self.sequence,
                "acked_offset": self.acked_offset, "seen_offsets": list(self.seen_offsets)}


@dataclass(frozen=True, slots=True)
class PartitionSummary(OutcomeCounts):
    """One partition's counts. Offsets are ``None`` when there is none."""

    partition: int
    first_offset: int | None
    """Lowest acknowledged offset."""
    last_offset: int | None
    """Highest acknowledged offset."""
    first_seen_offset: int | None
    """Lowest offset at which pass 1 saw a message of this run."""
    last_seen_offset: int | None
    """Highest offset at which pass 1 saw a message of this run."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: ``partition`` first, then the counts and the offsets."""
        return {"partition": self.partition, **asdict(self)}


@dataclass(frozen=True)
class Verification(OutcomeCounts):
    """The verifier's findings over the whole run (see the module docstring)."""

    foreign: int
    """Observations carrying another run id (ignored)."""
    redelivered: int
    """Observations ignored because the consumer re-read an offset it had passed."""
    passes: tuple[int, ...]
    """Passes reported done, in order."""
    partitions: tuple[PartitionSummary, ...]
    samples: Mapping[str, tuple[Sample, ...]] = field(
        default_factory=lambda: MappingProxyType({}))
    """Up to ``samples`` examples per class in :data:`CLASSES`, in partition/sequence
    order (``unexpected``: in observation order)."""

    @property
    def lost_first_pass_only(self) -> int:
        """Alias of :attr:`consumer_missed`."""
        return self.consumer_missed

    def violations(self, expect: str | None) -> list[str]:
        """One line per reason the run fails ``expect``; empty when it passes.

        - ``at-least-once``: any loss fails.
        - ``exactly-once``: any loss, duplicate or aborted read fails.
        - ``at-most-once``: any duplicate fails (losses are allowed).
        - ``None`` (no expectation): loss, inconsistent offsets or an aborted read fails:
          those break what Kafka promises an acknowledged write or a read_committed
          reader whatever the settings, while duplicates are a legitimate outcome of
          retries without idempotence. Reorders, consumer misses and failed- or
          indeterminate-but-present writes are reported but never fail a run.

        Raises :class:`ValueError` for any other ``expect``.
        """
        if expect is not None and expect not in EXPECTATIONS:
            raise ValueError(f"unknown expectation {expect!r}; use one of "
                             f"{', '.join(EXPECTATIONS)}")
        out: list[str] = []
        label = f"({expect})" if expect else "(no expectation given)"
        if expect in (None, "at-least-once", "exactly-once") and self.lost:
            out.append(f"lost: {self.lost} acknowledged message(s) never read back {label}")
        if expect in ("at-most-once", "exactly-once") and self.duplicated:
            out.append(f"duplicated: {self.duplicated} message(s) stored at more than one "
                       f"offset, {self.duplicate_copies} extra cop"
                       f"{'y' if self.duplicate_copies == 1 else 'ies'} {label}")
        if expect in (None, "exactly-once") and self.aborted_visible:
            out.append(f"aborted_visible: {self.aborted_visible} message(s) of aborted "
                       f"transactions were visible to the reader {label}")
        if expect is None and self.inconsistent_offsets:
            out.append(f"inconsistent_offsets: {self.inconsistent_offsets} acknowledged "
                       f"offset(s) did not hold the acknowledged message {label}")
        return out

    def verdict(self, expect: str | None) -> str:
        """``pass`` or ``fail`` (see :meth:`violations`)."""
        return "fail" if self.violations(expect) else "pass"

    def to_dict(self) -> dict[str, Any]:
        """Counts, ``partitions`` and ``samples`` in JSON-ready form (contract names)."""
        out: dict[str, Any] = {name: getattr(self, name)
                               for name in (*COUNTS, "foreign", "redelivered")}
        out["passes"] = list(self.passes)
        out["partitions"] = [p.to_dict() for p in self.partitions]
        out["samples"] = {name: [s.to_dict() for s in self.samples.get(name, ())]
                          for name in CLASSES}
        return out


class Verifier:
    """Streams a run's observations and classifies every send against the ledger."""

    def __init__(self, ledger: Ledger, run_id: bytes, samples: int = 10) -> None:
        if len(run_id) != RUN_ID_BYTES:
            raise ValueError(f"run id must be {RUN_ID_BYTES} bytes, got {len(run_id)}")
        if samples < 0:
            raise ValueError("samples must be >= 0")
        self._ledger = ledger
        self._lost: dict[int, list[int]] = {}
        self._duplicated: dict[int, list[int]] = {}
        self._run_id = bytes(run_id)
        self._samples = samples
        n = ledger.partitions
        self._n = n
        self._acked_offsets = [ledger.columns(p)[0] for p in range(n)]
        self._outcomes = [ledger.columns(p)[1] for p in range(n)]
        self._counts = [array("B", bytes(ledger.allocated(p))) for p in range(n)]
        self._flags = [array("B", bytes(ledger.allocated(p))) for p in range(n)]
        self._max_seq = [-1] * n
        self._last: dict[int, list[int]] = {1: [-1] * n}
        self._last1 = self._last[1]
        self._open1: list[int] | None = self._last1  # None once pass 1 is done
        self._first1 = [-1] * n
        # pass-1 observations not at the sequence's acked offset (seq -1: unexpected)
        self._odd_offsets = [array("q") for _ in range(n)]
        self._odd_seqs = [array("q") for _ in range(n)]
        # later-pass observations of sequences pass 1 did not see
        self._rescue_offsets = [array("q") for _ in range(n)]
        self._rescue_seqs = [array("q") for _ in range(n)]
        self._unexpected = [0] * n
        self._unexpected_elsewhere = 0  # partitions the ledger does not have
        self._unexpected_samples: list[Sample] = []
        self._foreign = 0
        self._redelivered = 0
        self._done: list[int] = []

    # -- streaming ------------------------------------------------------------------------

    def observe(self, partition: int, offset: int, record: ProbeRecord,
                pass_no: int = 1) -> None:
        """The consumer read ``record`` at ``partition``/``offset`` in pass ``pass_no``.

        Raises :class:`ValueError` for a pass already reported done or below 1.
        """
        if record.run_id != self._run_id:
            self._foreign += 1
            return
        self.observe_sequence(partition, offset, record.partition_seq, pass_no)

    def observe_foreign(self) -> None:
        """The consumer read a probe message of another run (counted, otherwise ignored)."""
        self._foreign += 1

    def observe_sequence(self, partition: int, offset: int, seq: int,
                         pass_no: int = 1) -> None:
        """:meth:`observe` for a message the caller already knows is of this run: the
        read-back passes' per-message path (no :class:`ProbeRecord` per message)."""
        last = self._open1 if pass_no == 1 else self._last_for(pass_no)
        if last is None:
            raise ValueError(f"pass {pass_no} was already reported done")
        if not 0 <= partition < self._n:
            if pass_no == 1:
                self._unexpected_elsewhere += 1
                self._sample_unexpected(partition, seq, offset)
            return
        previous = last[partition]
        if offset <= previous:
            self._redelivered += 1
            return
        last[partition] = offset
        flags = self._flags[partition]
        if pass_no == 1:
            if previous < 0:
                self._first1[partition] = offset
            if (seq >= len(flags) or seq < 0) and not self._grow(partition, seq):
                self._unexpected[partition] += 1
                self._odd_offsets[partition].append(offset)
                self._odd_seqs[partition].append(-1)
                self._sample_unexpected(partition, seq, offset)
                return
            counts = self._counts[partition]
            count = counts[seq]
            flag = flags[seq]
            if count == 0:
                flag |= _SEEN1
                if seq < self._max_seq[partition]:
                    flag |= _REORDERED
                else:
                    self._max_seq[partition] = seq
            if count < _SATURATED:
                counts[seq] = count + 1
            acked_at = self._acked_offsets[partition][seq]
            if acked_at == offset:
                flag |= _AT_ACKED
            elif acked_at >= 0 or count or self._outcomes[partition][seq] != _ACKED_V:
                # not where it was acked, a further copy, or no answer yet: keep it.
                # (An acks=0 send, acked without an offset, seen once: nothing to keep.)
                self._odd_offsets[partition].append(offset)
                self._odd_seqs[partition].append(seq)
            flags[seq] = flag
            return
        if (seq >= len(flags) or seq < 0) and not self._grow(partition, seq):
            return
        flag = flags[seq]
        if not flag & _SEEN1:
            flags[seq] = flag | _SEEN_LATER
            self._rescue_offsets[partition].append(offset)
            self._rescue_seqs[partition].append(seq)

    def pass_done(self, pass_no: int) -> None:
        """Pass ``pass_no`` has read every partition past its last acked offset."""
        if pass_no < 1:
            raise ValueError(f"pass numbers start at 1, got {pass_no}")
        if pass_no not in self._done:
            self._done.append(pass_no)
        if pass_no == 1:
            self._open1 = None

    def _last_for(self, pass_no: int) -> list[int] | None:
        if pass_no in self._done:
            return None
        last = self._last.get(pass_no)
        if last is None:
            if pass_no < 1:
                raise ValueError(f"pass numbers start at 1, got {pass_no}")
            last = self._last[pass_no] = [-1] * self._n
        return last

    def _grow(self, partition: int, seq: int) -> bool:
        """Catch up with sequences the ledger allocated after we started."""
        allocated = self._ledger.allocated(partition)
        if seq < 0 or seq >= allocated:
            return False
        extra = bytes(allocated - len(self._flags[partition]))
        self._flags[partition].frombytes(extra)
        self._counts[partition].frombytes(extra)
        return True

    def _sample_unexpected(self, partition: int, seq: int, offset: int) -> None:
        if len(self._unexpected_samples) < self._samples:
            self._unexpected_samples.append(Sample(partition, seq, None, (offset,)))

    def nbytes(self) -> int:
        """Bytes held per message (arrays with their slack and headers)."""
        return sum(sys.getsizeof(column)
                   for columns in (self._counts, self._flags, self._odd_offsets,
                                   self._odd_seqs, self._rescue_offsets, self._rescue_seqs)
                   for column in columns)

    # -- classification -------------------------------------------------------------------

    def result(self) -> Verification:
        """Classify every send. May be called more than once (it is idempotent)."""
        n_classes = len(CLASSES) + 1
        self._lost = {}
        self._duplicated = {}
        tallies: list[list[int]] = []
        picks: dict[int, list[tuple[int, int]]] = {c: [] for c in range(len(CLASSES))}
        for p in range(self._n):
            tally = [0] * n_classes
            self._classify_partition(p, tally, picks)
            tally[_UNEXPECTED] = self._unexpected[p]
            tallies.append(tally)
        samples = self._build_samples(picks)
        summaries = tuple(self._summary(p, tallies[p]) for p in range(self._n))
        totals = [sum(t[i] for t in tallies) for i in range(n_classes)]
        totals[_UNEXPECTED] += self._unexpected_elsewhere
        return Verification(
            **_counts(self._ledger.counts(), totals),
            foreign=self._foreign, redelivered=self._redelivered, passes=tuple(self._done),
            partitions=summaries, samples=MappingProxyType(samples))

    def lost_sequences(self, partition: int) -> list[int]:
        """The lost sequences of ``partition``, as of the last :meth:`result`."""
        return list(self._lost.get(partition, ()))

    def duplicated_sequences(self, partition: int) -> list[int]:
        """The duplicated sequences of ``partition``, as of the last :meth:`result`."""
        return list(self._duplicated.get(partition, ()))

    def _classify_partition(self, p: int, tally: list[int],
                            picks: dict[int, list[tuple[int, int]]]) -> None:
        offsets, outcome, aborted = self._ledger.columns(p)
        n = len(offsets)
        if n == 0:
            return
        flags, counts = self._flags[p], self._counts[p]
        if len(flags) < n:
            self._grow(p, n - 1)
        # Resolve pass-1 observations made before their ack arrived, and collect the
        # offsets that held a message of this run other than the one acked there.
        held: list[int] = []
        for off, seq in zip(self._odd_offsets[p], self._odd_seqs[p], strict=True):
            if seq >= 0 and offsets[seq] == off:
                flags[seq] |= _AT_ACKED
            else:
                held.append(off)  # observed in offset order: already sorted
        # One key byte per sequence: flags | outcome << 4 | aborted << 6 | dup << 7, built
        # with big-integer bit operations (C speed); only non-healthy keys are visited.
        key_int = (int.from_bytes(flags.tobytes(), "little")
                   | int.from_bytes(outcome.tobytes(), "little") << 4
                   | int.from_bytes(aborted.tobytes(), "little") << 6
                   | int.from_bytes(counts.tobytes().translate(_DUP_TABLE), "little") << 7)
        keys = key_int.to_bytes(n, "little")
        del key_int
        exceptions = keys.translate(_EXCEPTION_TABLE)
        limit = self._samples
        seq = exceptions.find(1)
        while seq >= 0:
            key = keys[seq]
            flag = key & 15
            result = (key >> 4) & 3
            seen1 = flag & _SEEN1
            seen = seen1 or flag & _SEEN_LATER
            hits: list[int] = []
            if key & 128:
                hits.append(_DUP)
                self._duplicated.setdefault(p, []).append(seq)
                tally[_COPIES] += counts[seq] - 1
            if flag & _REORDERED:
                hits.append(_REORD)
            if key & 64:
                if seen:
                    hits.append(_ABORTED_VIS)
            elif result == SendOutcome.acked:
                if not seen:
                    hits.append(_LOST)
                    self._lost.setdefault(p, []).append(seq)
                elif not seen1:
                    hits.append(_MISSED)
                acked_at = offsets[seq]
                if acked_at != NO_OFFSET and (
                        (seen1 and not flag & _AT_ACKED)
                        or (not seen1 and _contains(held, acked_at))):
                    hits.append(_INCONS)
            elif result == SendOutcome.failed:
                if seen:
                    hits.append(_FAILED_PRES)
            else:  # indeterminate, or still pending
                hits.append(_INDET_PRES if seen else _INDET_ABS)
            for cls in hits:
                tally[cls] += 1
                chosen = picks[cls]
                if len(chosen) < limit:
                    chosen.append((p, seq))
            seq = exceptions.find(1, seq + 1)

    def _build_samples(self, picks: dict[int, list[tuple[int, int]]]
                       ) -> dict[str, tuple[Sample, ...]]:
        wanted: dict[int, set[int]] = {}
        for chosen in picks.values():
            for p, seq in chosen:
                wanted.setdefault(p, set()).add(seq)
        seen_at: dict[tuple[int, int], set[int]] = {}
        for p, seqs in wanted.items():
            acked_offsets = self._acked_offsets[p]
            flags = self._flags[p]
            for seq in seqs:
                seen_at[(p, seq)] = ({acked_offsets[seq]} if flags[seq] & _AT_ACKED
                                     else set())
            for offs, seqs_col in ((self._odd_offsets[p], self._odd_seqs[p]),
                                   (self._rescue_offsets[p], self._rescue_seqs[p])):
                for off, seq in zip(offs, seqs_col, strict=True):
                    if seq in seqs:
                        seen_at[(p, seq)].add(off)
        out: dict[str, tuple[Sample, ...]] = {}
        for cls, name in enumerate(CLASSES):
            if cls == _UNEXPECTED:
                out[name] = tuple(self._unexpected_samples)
                continue
            items = []
            for p, seq in picks[cls]:
                acked = self._acked_offsets[p][seq]
                items.append(Sample(p, seq, None if acked == NO_OFFSET else acked,
                                    tuple(sorted(seen_at[(p, seq)]))))
            out[name] = tuple(items)
        return out

    def _summary(self, p: int, tally: list[int]) -> PartitionSummary:
        first, last = self._ledger.first_acked_offset(p), self._ledger.last_acked_offset(p)
        first_seen, last_seen = self._first1[p], self._last1[p]
        return PartitionSummary(
            **_counts(self._ledger.partition_counts(p), tally), partition=p,
            first_offset=None if first < 0 else first,
            last_offset=None if last < 0 else last,
            first_seen_offset=None if first_seen < 0 else first_seen,
            last_seen_offset=None if last_seen < 0 else last_seen)


def _counts(sends: dict[str, int], tally: list[int]) -> dict[str, int]:
    """The :class:`OutcomeCounts` of the ledger's ``sends`` counts and a class tally."""
    return {"sent": sends["sent"], "acked": sends["acked"], "failed": sends["failed"],
            "indeterminate": sends["indeterminate"] + sends["pending"],
            "aborted": sends["aborted"], "duplicate_copies": tally[_COPIES],
            **{name: tally[cls] for cls, name in enumerate(CLASSES)}}


def _contains(sorted_values: list[int], value: int) -> bool:
    index = bisect_left(sorted_values, value)
    return index < len(sorted_values) and sorted_values[index] == value
