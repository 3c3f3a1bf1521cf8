"""KA312-KA315: the KRaft controller quorum, which every metadata change goes through
(leader elections, ISR changes, topics created, configs altered).

They read the quorum as DescribeQuorum gave it (``snapshot.quorum``) and the finalized
``kraft.version``; a snapshot whose quorum was not read (not authorized, no answer, taken
before kaudit read it) skips them, and check's header says why (``quorum_unread``).
Thresholds are the default profile's.
"""

from __future__ import annotations

from collections.abc import Iterator

from kaudit.check.findings import Severity, Subject, SubjectKind
from kaudit.check.rules.registry import ClusterContext, Violation, rule
from kaudit.cluster.model import ClusterSnapshot
from kaudit.cluster.quorum import KRAFT_VERSION, QuorumReplica, QuorumState

_FEATURES = "finalized features"


def _cluster(snapshot: ClusterSnapshot) -> Subject:
    return Subject(SubjectKind.cluster, snapshot.cluster_id or "cluster")


def _source(quorum: QuorumState) -> str:
    by = f", answered through broker {quorum.answered_by}" if quorum.answered_by is not None \
        else ""
    return f"DescribeQuorum (leader {_node(quorum.leader_id)}, epoch {quorum.leader_epoch}{by})"


def _node(node_id: int | None) -> str:
    return "none" if node_id is None else str(node_id)


def _voters(quorum: QuorumState) -> str:
    count = len(quorum.voters)
    ids = ", ".join(str(v.replica_id) for v in quorum.voters)
    return f"{count} voter{'s' if count != 1 else ''} ({ids})"


def _survives(count: int) -> str:
    tolerated = max(0, (count - 1) // 2)
    if tolerated == 0:
        return "survives no controller failure"
    return f"survives {tolerated} controller failure{'s' if tolerated > 1 else ''}"


@rule("KA312", "quorum.static", Severity.info,
      "The controller quorum is static: its voters cannot be changed while the cluster runs.",
      scope="cluster",
      what="Reports a KRaft cluster whose finalized `kraft.version` is 0 (or absent, before "
           "Kafka 3.9): its voters are the fixed list of `controller.quorum.voters` in every "
           "node's configuration, not a set kept in the metadata log (KIP-853).",
      why="A controller whose disk is lost cannot be replaced, nor a controller added or "
          "removed, without changing `controller.quorum.voters` on every broker and "
          "controller and restarting them all; a dynamic quorum adds and removes voters "
          "while the cluster runs (`kafka-metadata-quorum.sh add-controller`, "
          "`remove-controller`), and knows each voter's log directory, so a controller "
          "restarted on an empty disk cannot vote as if it still held the log. Kafka still "
          "supports static quorums; this is about how a failed controller is recovered, "
          "not about data at risk now.",
      example="A cluster formatted with `controller.quorum.voters` set (every KRaft cluster "
              "before Kafka 3.9, and kaudit's own lab).",
      fix="On Kafka 4.1 or newer: `kafka-features.sh --bootstrap-server B upgrade --feature "
          "kraft.version=1`, then replace `controller.quorum.voters` with "
          "`controller.quorum.bootstrap.servers` on every node. Kafka 3.9 and 4.0 cannot "
          "upgrade a static quorum: a new cluster formatted with `--standalone` or "
          "`--initial-controllers` is dynamic.")
def static_quorum(ctx: ClusterContext) -> Iterator[Violation]:
    """kraft.version 0 on a KRaft cluster."""
    snapshot = ctx.snapshot
    level = snapshot.feature_level(KRAFT_VERSION)
    # A quorum read proves KRaft; so does Kafka 4 (ZooKeeper is gone). A 3.x cluster whose
    # quorum was not read may run on ZooKeeper, which has no kraft.version either.
    kraft = snapshot.quorum is not None or (snapshot.kafka_version or (0, 0)) >= (4, 0)
    if level is None or level >= 1 or not kraft:
        return
    voters = ""
    if snapshot.quorum is not None:
        ids, many = ", ".join(str(v.replica_id) for v in snapshot.quorum.voters), \
            len(snapshot.quorum.voters) > 1
        voters = f"; its voter{'s' if many else ''} ({ids}) {'are' if many else 'is'} fixed"
    yield Violation(_cluster(snapshot),
                    f"The controller quorum is static ({KRAFT_VERSION}={level}){voters}: a "
                    "controller that dies cannot be replaced, nor one added or removed, "
                    "without changing controller.quorum.voters on every node and restarting "
                    "them all.",
                    expected=f"{KRAFT_VERSION}>=1 (a dynamic quorum)",
                    actual=f"{KRAFT_VERSION}={level}", source=_FEATURES)


@rule("KA313", "quorum.too-few-voters", Severity.warning,
      "The controller quorum has fewer voters than the profile requires.", scope="cluster",
      what="Compares the number of voters in the KRaft quorum (DescribeQuorum) with the "
           "default profile's `min_controller_voters` (3 unless a policy says otherwise; "
           "`best-effort`: 1).",
      why="Every metadata change is committed by a majority of the voters, so N voters "
          "survive (N - 1) / 2 controller failures. With one voter, or two, one controller "
          "failure stops them all until it is back: no new leader when a broker fails (its "
          "partitions stay offline), no ISR shrink (acks=all writes to a partition with a "
          "dead follower time out), no topic created or deleted, no config altered. And a "
          "single voter's lost disk leaves no controller with the metadata log.",
      example="A cluster run with one controller (kaudit's default lab), or a combined "
              "broker-and-controller node as the only voter.",
      fix="Run 3 controllers (5 to survive two failures), on separate machines. With a "
          "dynamic quorum, format the new ones with `--no-initial-controllers`, start them "
          "and `kafka-metadata-quorum.sh add-controller`; a static quorum needs every node's "
          "`controller.quorum.voters` changed and a restart (KA312).")
def too_few_voters(ctx: ClusterContext) -> Iterator[Violation]:
    """Fewer voters than min_controller_voters."""
    quorum, floor = ctx.snapshot.quorum, ctx.thresholds.min_controller_voters
    if quorum is None or len(quorum.voters) >= floor:
        return
    count = len(quorum.voters)
    if count == 1:
        effect = (f"when controller {quorum.voters[0].replica_id} fails, no metadata change "
                  "can be made until it is back (no leader elected for the partitions of a "
                  "failed broker, no ISR shrunk, no topic created)")
    else:
        effect = (f"a majority is {count // 2 + 1} of them, so the quorum {_survives(count)} "
                  "and any failure stops every metadata change until a majority is back")
    yield Violation(_cluster(ctx.snapshot),
                    f"The controller quorum has {_voters(quorum)}, fewer than the "
                    f"{floor} the profile requires: {effect}.",
                    expected=f">= {floor} voters", actual=f"{count}",
                    source=_source(quorum))


@rule("KA314", "quorum.even-voters", Severity.warning,
      "The controller quorum has an even number of voters.", scope="cluster",
      what="Reports a KRaft quorum of 2, 4, 6... voters.",
      why="A majority of an even number of voters is one more than half, so 4 voters "
          "survive one controller failure, as 3 do, and 2 survive none, as 1 does: the "
          "extra voter adds a machine that can fail and a vote every commit waits for, "
          "and no failure tolerance. Two voters are worse than one: either one failing "
          "stops the quorum.",
      example="Four controllers, one per rack of four; or a third controller removed and "
              "not replaced.",
      fix="Run an odd number of voters: add one (or remove one) with "
          "`kafka-metadata-quorum.sh add-controller` / `remove-controller` on a dynamic "
          "quorum.")
def even_voters(ctx: ClusterContext) -> Iterator[Violation]:
    """An even voter count."""
    quorum = ctx.snapshot.quorum
    if quorum is None or not quorum.voters or len(quorum.voters) % 2:
        return
    count = len(quorum.voters)
    yield Violation(_cluster(ctx.snapshot),
                    f"The controller quorum has {_voters(quorum)}: a majority is "
                    f"{count // 2 + 1}, so it {_survives(count)}, no more than "
                    f"{count - 1} voter{'s' if count - 1 != 1 else ''} would.",
                    expected="an odd number of voters", actual=str(count),
                    source=_source(quorum))


@rule("KA315", "quorum.voter-lagging", Severity.warning,
      "A controller trails the active controller's metadata log, or has not caught up lately.",
      scope="cluster",
      what="For each voter other than the leader (DescribeQuorum): how many records its "
           "metadata log trails the leader's log end (warn above the default profile's "
           "`max_controller_lag_records`, 10000), and how long before the snapshot it last "
           "held the leader's whole log (its last caught-up time, by the leader's clock; "
           "warn above `max_controller_caught_up_seconds`, 30). A voter the leader has not "
           "heard from in its epoch is reported too.",
      why="A voter that lags cannot win an election (the others refuse a candidate with a "
          "shorter log), and its vote is not there for commits: with it behind, the quorum "
          "has one failure fewer to spare. An idle metadata log still grows by two records "
          "a second (a no-op every 500 ms), and a healthy voter fetches every few hundred "
          "ms, so 30 s behind means it is down, partitioned or too slow.",
      example="A controller frozen by a long GC pause or a full disk, still a voter.",
      fix="Look at the controller's log and `kafka-metadata-quorum.sh describe "
          "--replication`; restart or replace it (on a dynamic quorum: `remove-controller`, "
          "then `add-controller` a healthy one).")
def voter_lagging(ctx: ClusterContext) -> Iterator[Violation]:
    """Voters behind the leader by records or time."""
    quorum = ctx.snapshot.quorum
    if quorum is None or quorum.leader is None:
        return
    for voter in quorum.voters:
        if voter.replica_id != quorum.leader_id:
            yield from _lagging(ctx, quorum, voter)


def _lagging(ctx: ClusterContext, quorum: QuorumState, voter: QuorumReplica
             ) -> Iterator[Violation]:
    t = ctx.thresholds
    leader = quorum.leader
    assert leader is not None
    end = leader.log_end_offset if leader.log_end_offset is not None else quorum.high_watermark
    expected = (f"<= {t.max_controller_lag_records} records behind, caught up within "
                f"{t.max_controller_caught_up_seconds} s")
    others = max(0, (len(quorum.voters) - 1) // 2 - 1)
    spare = (f"the quorum of {len(quorum.voters)} voters can lose "
             + ("no other controller" if not others else
                f"only {others} other controller{'s' if others > 1 else ''}"))
    if voter.log_end_offset is None and voter.last_caught_up_ms is None:
        yield Violation(_cluster(ctx.snapshot),
                        f"Controller {voter.replica_id} has not fetched from the leader "
                        f"({quorum.leader_id}) in its epoch {quorum.leader_epoch}: it cannot "
                        f"take over, and {spare} while it is gone.",
                        expected=expected, actual="no fetch seen", source=_source(quorum))
        return
    lag = None if voter.log_end_offset is None else max(0, end - voter.log_end_offset)
    age_s = None if voter.last_caught_up_ms is None else \
        max(0, ctx.snapshot.taken_at_ms - voter.last_caught_up_ms) / 1000
    behind = t.max_controller_lag_records and lag is not None \
        and lag > t.max_controller_lag_records
    stale = t.max_controller_caught_up_seconds and age_s is not None \
        and age_s > t.max_controller_caught_up_seconds
    if not behind and not stale:
        return
    said = [f"trails the leader's log by {lag} records (leader {quorum.leader_id} at {end}, "
            f"it at {voter.log_end_offset})" if lag is not None else
            "has no known log end offset",
            f"last held all of it {age_s:.0f} s before the snapshot" if age_s is not None
            else "has no known caught-up time"]
    yield Violation(_cluster(ctx.snapshot),
                    f"Controller {voter.replica_id} {said[0]} and {said[1]}: it cannot win an "
                    f"election while behind, and {spare} until it catches up.",
                    expected=expected,
                    actual=f"{_or_unknown(lag, ' records')} behind, caught up "
                           f"{_or_unknown(age_s, ' s', '.0f')} ago",
                    source=_source(quorum))


def _or_unknown(value: float | None, unit: str, form: str = "") -> str:
    return "unknown" if value is None else f"{value:{form}}{unit}"
