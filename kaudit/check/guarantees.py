"""The delivery guarantee a topic, or a producer -> topic pair, really has.

This docstring is the contract (ARCHITECTURE.md, "Contracts").

For a topic, assuming producers with acks=all:

- ``loss_tolerance`` (broker crashes survived without losing an acknowledged
  write): effective min.insync.replicas - 1 with unclean leader election off;
  0 with it on (a lagging replica can be elected and the log truncated); 0
  with RF=1.
- The *effective* min.insync.replicas is min(min.insync.replicas, RF): since
  Kafka 3.7 (KAFKA-15583) the brokers cap it at the replica count, for acks=all
  writes and the high watermark alike, ELR or not; kaudit's lab confirms it
  (RF=2, min.insync.replicas=3 accepts acks=all writes on 4.3). The cap is
  known when the cluster's metadata.version says 3.7 or later, and assumed (the
  reasons say so, and that older brokers refuse every acks=all write) otherwise:
  a metadata.version below 3.7 does not prove old brokers.
- ``write_tolerance`` (brokers down while acks=all writes still succeed):
  RF - effective min.insync.replicas, never negative; 0 means any broker down
  blocks writes.
- ``semantics`` with no producer config given: the best the topic's settings
  allow. Semantics is about the producer protocol, and failures are counted
  separately by ``loss_tolerance``, so this is ``exactly-once`` whenever acks=all
  writes can succeed (idempotent and transactional producers need acks=all),
  which with the cap is always. Reports say the two apart, never one beside the
  other as a single label: what the producer side can get
  (``producer_gives``), and what survives how many broker failures
  (``survives``), see :mod:`kaudit.report.check.words`.

For a producer -> topic pair:

- ``loss_tolerance`` is 0 when the producer uses acks=0 or acks=1, else the
  topic's.
- ``semantics``: at-most-once with acks=0 or retries=0; exactly-once with an
  idempotent or transactional producer (end to end only with read_committed
  consumers and an idempotent or transactional sink); at-least-once otherwise.
- ``write_tolerance`` is the topic's (it is defined for acks=all writes).
- ``within_session``: the producer is idempotent but not transactional, so its
  exactly-once holds within one producer session (a restart can duplicate).

Live ISR state does not change these numbers: they describe what the
configuration guarantees; live rules (KA2xx) report the current state.
"""

from __future__ import annotations

from collections.abc import Sequence

from kaudit.check.clients import ClientConfig
from kaudit.check.findings import Guarantee, Reader, Semantics
from kaudit.check.rules.common import Durability, durability
from kaudit.cluster.model import ClusterSnapshot, Topic
from kaudit.cluster.topics import CANARY_TOPIC


def _topic_numbers(d: Durability) -> tuple[int, int, list[str]]:
    reasons = [f"RF={d.replication_factor}", f"min.insync.replicas={d.min_isr}",
               f"unclean leader election {'on' if d.unclean else 'off'}"]
    if d.min_isr > d.replication_factor:
        reasons.append(f"the brokers enforce min(min.insync.replicas, RF)="
                       f"{d.effective_min_isr} (Kafka 3.7+"
                       + ("" if d.capped_known else "; assumed: metadata.version does not "
                          "prove it; older brokers refuse every acks=all write") + ")")
    write_tolerance = d.write_tolerance
    if d.replication_factor <= 1:
        loss_tolerance = 0
        reasons.append("a single copy: any broker loss loses data")
    elif d.unclean:
        loss_tolerance = 0
        reasons.append("an out-of-sync replica may become leader and truncate acked writes")
    else:
        loss_tolerance = min(d.min_isr, d.replication_factor) - 1
        if d.min_isr == 1:
            reasons.append("the ISR may shrink to the leader alone")
    if write_tolerance == 0:
        reasons.append("any broker down blocks acks=all writes")
    return loss_tolerance, write_tolerance, reasons


def topic_readers(topic: Topic, snapshot: ClusterSnapshot) -> tuple[Reader, ...]:
    """The consumer groups with committed offsets on ``topic``, then the share groups with
    state on it: lag and oldest unread age."""
    if not snapshot.groups and not snapshot.share_groups:
        return ()
    taken = snapshot.taken_at_ms
    out = []
    for group in snapshot.groups or ():
        mine = [o for o in group.offsets if o.topic == topic.name and o.committed is not None]
        if not mine:
            continue
        lag = 0
        for offset in mine:
            ends = snapshot.partition_offsets(topic.name, offset.partition)
            if ends is not None and offset.committed is not None:
                lag += max(0, ends.high_watermark - max(offset.committed, ends.log_start))
        since = [o.unread_since_ms for o in mine if o.unread_since_ms is not None]
        out.append(Reader(group.group_id, lag,
                          max(0, taken - min(since)) if since and lag else None))
    for share in snapshot.share_groups or ():
        states = [s for s in share.partitions if s.topic == topic.name
                  and s.start_offset is not None]
        if not states:
            continue
        lag = 0
        for s in states:
            ends = snapshot.partition_offsets(topic.name, s.partition)
            lag += s.lag if s.lag is not None else 0 if ends is None or s.start_offset is None \
                else max(0, ends.high_watermark - max(s.start_offset, ends.log_start))
        since = [s.undelivered_since_ms for s in states if s.undelivered_since_ms is not None]
        out.append(Reader(share.group_id, lag,
                          max(0, taken - min(since)) if since and lag else None, kind="share"))
    return tuple(out)


def topic_guarantee(topic: Topic, snapshot: ClusterSnapshot) -> Guarantee:
    """What a topic's settings guarantee to acks=all producers (best semantics allowed)."""
    d = durability(topic, snapshot)
    loss, write, reasons = _topic_numbers(d)
    # acks=all writes can always succeed while every replica is in sync: the brokers cap
    # min.insync.replicas at RF (Kafka 3.7+), so the best a topic allows is exactly-once.
    semantics = Semantics.exactly_once
    reasons.append("exactly-once end to end needs read_committed consumers and an "
                   "idempotent or transactional sink too")
    elr = snapshot.feature_level("eligible.leader.replicas.version")
    if elr is not None and d.replication_factor > 1 and not d.unclean:
        reasons.append("ELR on: a replica that left the ISR while it held every acknowledged "
                       "write stays electable, so losing the last in-sync replica need not "
                       "take the partition offline" if elr >= 1 else
                       "ELR off: when the last in-sync replica fails, the partition stays "
                       "offline until that replica returns")
    if topic.name == CANARY_TOPIC:
        # Audited like any topic, and named for what it is: no stray, nothing to clean up.
        reasons.insert(0, "kaudit canary's own topic, kept on purpose")
    return Guarantee(topic=topic.name, semantics=semantics, loss_tolerance=loss,
                     write_tolerance=write, producer=None, reasons=tuple(reasons),
                     readers=topic_readers(topic, snapshot))


def producer_semantics(producer: ClientConfig) -> tuple[Semantics, list[str]]:
    """The delivery semantics a producer's settings give, with the reasons."""
    if producer.acks == "0":
        return Semantics.at_most_once, ["acks=0: success is reported before the broker has it"]
    if producer.retries <= 0:
        return Semantics.at_most_once, [f"retries={producer.retries}: a failed send is dropped"]
    if producer.transactional_id is not None:
        state = producer.idempotence
        if not state.enabled:
            return Semantics.at_least_once, [state.reason, "transactional.id without idempotence"]
        return Semantics.exactly_once, ["transactional producer"]
    state = producer.idempotence
    if state.enabled and not producer.idempotence_conflicts():
        return Semantics.exactly_once, [
            state.reason, "idempotence holds within one producer session; a restart can "
                          "duplicate (use transactions)"]
    return Semantics.at_least_once, [state.reason, "acked and retried: duplicates possible"]


def pair_guarantee(producer: ClientConfig, topic: Topic, snapshot: ClusterSnapshot,
                   consumers: Sequence[ClientConfig] = ()) -> Guarantee:
    """What a producer writing ``topic`` really gets; ``consumers`` read the same topic."""
    d = durability(topic, snapshot)
    loss, write, reasons = _topic_numbers(d)
    semantics, why = producer_semantics(producer)
    reasons = [f"acks={producer.acks}", *why, *reasons]
    if producer.acks != "all":
        loss = 0
        reasons.append(f"acks={producer.acks}: acknowledged before any follower has the write")
    if semantics is Semantics.exactly_once:
        if consumers and all(c.read_committed for c in consumers):
            reasons.append("consumers read_committed; the sink must be idempotent or "
                           "transactional for exactly-once end to end")
        elif consumers:
            reasons.append("a consumer reads uncommitted records: not exactly-once end to end")
        else:
            reasons.append("end to end only with read_committed consumers and an idempotent "
                           "or transactional sink")
    return Guarantee(topic=topic.name, semantics=semantics, loss_tolerance=loss,
                     write_tolerance=write, producer=producer.path, reasons=tuple(reasons),
                     within_session=(semantics is Semantics.exactly_once
                                     and producer.transactional_id is None))
