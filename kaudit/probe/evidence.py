"""The evidence for each lost record's cause, read from Kafka after the run.

The partitions' log start and end offsets and the offsets acknowledged to the run's other
records give each loss its cause (:func:`kaudit.probe.causes.attribute_losses`). A
truncation is then placed in leader epochs: the partition's current leader is asked
(OffsetForLeaderEpoch) where the epoch the lost records were written in ends on its log.
When no epoch of theirs was reported, the epoch asked about is that of the last record the
log kept below them, read with a consumer: the epochs of a log only grow with its offsets,
so the leader's log left that epoch at the offset where it was cut.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kaudit.cluster.client import AdminSession, new_consumer
from kaudit.cluster.protocol import EpochEnd, read_epoch_ends
from kaudit.cluster.segments import SegmentReader
from kaudit.cluster.topics import partition_leaders
from kaudit.connection.settings import ConnectionSettings
from kaudit.errors import KauditError
from kaudit.probe.causes import EpochCut, LossCauses, attribute_losses
from kaudit.probe.epochs import EpochRuns
from kaudit.probe.ledger import Ledger
from kaudit.waiting import Deadline

KEPT_WINDOW = 64
"""How far below a cut the last kept record is looked for: transaction markers take
offsets a consumer is never shown."""


class LossEvidence:
    """What one run's losses are attributed from, read once for all of them."""

    def __init__(self, session: AdminSession, topic: str, ledger: Ledger,
                 lost: Mapping[int, Sequence[int]], run_id: bytes, notes: list[str]) -> None:
        """``lost``: every lost record's sequence, by partition."""
        self.session, self.topic, self.ledger = session, topic, ledger
        self.run_id, self.notes = run_id, notes
        wanted = sorted(p for p, seqs in lost.items() if seqs)
        # Two records acknowledged at one offset: the log was cut below the first and the
        # offset written again.
        self.others = {p: _acked_to_others(ledger, p, set(lost[p])) for p in wanted}
        try:
            self.starts: dict[int, int | None] = dict(
                session.list_offsets(topic, wanted, "earliest"))
            self.ends = session.list_offsets(topic, wanted, "latest")
        except KauditError as exc:
            notes.append(f"the partitions' log start and end offsets were not read "
                         f"({exc.message}): only a rewritten offset tells a cause")
            self.starts, self.ends = {}, {}

    def causes(self, lost: Mapping[int, Sequence[int]],
               seen: Sequence[EpochRuns] | None = None) -> LossCauses:
        """The causes of the losses ``lost`` (sequences by partition, sorted), a truncation
        placed in leader epochs; ``seen``: the epochs a reader was shown records in, by
        partition."""
        offsets = {p: [self.ledger.offset(p, seq) for seq in seqs] for p, seqs in lost.items()}
        epochs = {p: _epochs(self.ledger, p, list(seqs), seen) for p, seqs in lost.items()}
        causes = attribute_losses(offsets, self.starts, self.ends, self.others, epochs)
        if not causes.truncated:
            return causes
        return causes.with_cuts(self._cuts(causes))

    def _cuts(self, causes: LossCauses) -> dict[int, EpochCut]:
        """Each truncated partition's cut: where its epoch ends on its current leader."""
        truncated = {p.partition: p for p in causes.partitions
                     if p.truncated and p.truncated_offsets is not None}
        unknown = {n: p.truncated_offsets[0] for n, p in truncated.items()
                   if p.acked_epochs is None and p.truncated_offsets is not None}
        kept = last_kept_below(self.session.settings, self.topic, unknown, self.starts,
                               self.run_id) if unknown else {}
        cuts: dict[int, EpochCut] = {}
        asks: dict[int, int] = {}
        for n, p in truncated.items():
            below = kept.get(n)
            if isinstance(below, str):
                cuts[n] = EpochCut(unread=below)
            elif p.acked_epochs is not None:
                asks[n] = p.acked_epochs[0]
            elif below is not None:
                asks[n] = below[1]
        if not asks:
            return cuts
        answers, leaders = self._ask_leaders(asks)
        for n, epoch in asks.items():
            below = kept.get(n)
            kept_below = below if isinstance(below, tuple) else None
            answer = answers[n]
            if isinstance(answer, EpochEnd):
                cuts[n] = EpochCut(leader=answer.leader, epoch_asked=epoch,
                                   kept_below=kept_below, epoch_on_leader=answer.epoch,
                                   end_offset=answer.end_offset)
            else:
                cuts[n] = EpochCut(leader=leaders.get(n), epoch_asked=epoch,
                                   kept_below=kept_below, unread=answer)
        return cuts

    def _ask_leaders(self, asks: dict[int, int]
                     ) -> tuple[dict[int, EpochEnd | str], dict[int, int]]:
        """Where each partition's epoch of ``asks`` ends on its current leader, or why
        that was not read; and the leaders asked. A partition whose leader moved since the
        metadata was read (the heal of a fault may move it back) is asked again, once."""
        settings = self.session.settings
        deadline = Deadline(settings.timeout)
        answers: dict[int, EpochEnd | str] = {}
        leaders: dict[int, int] = {}
        for _ in range(2):
            no_leader = "the partition has no leader now"
            try:
                found, brokers = partition_leaders(self.session, self.topic)
            except KauditError as exc:
                found, brokers = {}, {}
                no_leader = f"its leader was not read ({exc.message})"
            leaders.update(found)
            read = read_epoch_ends(settings, brokers, {
                (self.topic, n): (found[n], e) for n, e in asks.items() if n in found},
                deadline)
            answers.update({n: read.get((self.topic, n), no_leader) for n in asks})
            asks = {n: e for n, e in asks.items() if _moved(answers[n])}
            if not asks or deadline.expired():
                break
        return answers, leaders


def _moved(answer: EpochEnd | str) -> bool:
    """Whether an answer says the partition's leadership moved under the question."""
    return isinstance(answer, str) and any(
        word in answer for word in ("NOT_LEADER", "LEADER_NOT_AVAILABLE", "no leader now"))


def _acked_to_others(ledger: Ledger, partition: int, lost: set[int]) -> set[int]:
    return {o for seq, o in enumerate(ledger.columns(partition)[0])
            if o >= 0 and seq not in lost}


def _epochs(ledger: Ledger, partition: int, seqs: list[int],
            seen: Sequence[EpochRuns] | None) -> list[int | None]:
    """Each record's leader epoch: its acknowledgement's, else the one a reader was shown
    it in (None: neither reported one)."""
    epochs = ledger.acked_epochs(partition, seqs)
    if seen is not None and partition < len(seen) and len(seen[partition]):
        shown = seen[partition].epochs_of(seqs)
        epochs = [a if a is not None else b for a, b in zip(epochs, shown, strict=True)]
    return epochs


def last_kept_below(conn: ConnectionSettings, topic: str, cuts: Mapping[int, int],
                    starts: Mapping[int, int | None], run_id: bytes
                    ) -> dict[int, tuple[int, int] | str]:
    """For each partition, the offset and leader epoch of the last record its log keeps
    below ``cuts[partition]`` (looked for up to :data:`KEPT_WINDOW` offsets below), or why
    there is none to tell."""
    unreported = "the records' leader epochs were not reported, and"
    out: dict[int, tuple[int, int] | str] = {
        p: f"{unreported} no record lies below offset 0" for p, cut in cuts.items() if cut <= 0}
    pending = {p for p in cuts if p not in out}
    found: dict[int, tuple[int, int | None]] = {}
    within = max(conn.timeout, 5)
    if pending:
        consumer = new_consumer(conn, None, **{
            "group.id": f"kaudit-probe-epochs-{run_id.hex()}", "enable.auto.commit": False,
            "enable.partition.eof": True, "auto.offset.reset": "earliest"})
        try:
            reader = SegmentReader(consumer, topic, {
                p: (max(starts.get(p) or 0, cuts[p] - KEPT_WINDOW), cuts[p]) for p in pending})
            for msg in reader.records(Deadline(within)):
                found[msg.partition()] = (msg.offset(), msg.leader_epoch())
        finally:
            consumer.close()
        unread = set(reader.left)
        for p in pending:
            kept = found.get(p)
            if kept is None:
                out[p] = (f"the records below offset {cuts[p]} were not read within "
                          f"{within:g}s" if p in unread else
                          f"{unreported} the log keeps no record in the {KEPT_WINDOW} "
                          f"offsets below {cuts[p]}")
            elif kept[1] is None:
                out[p] = (f"the record at offset {kept[0]} carries no leader epoch (message "
                          "format older than v2)")
            else:
                out[p] = (kept[0], kept[1])
    return out
