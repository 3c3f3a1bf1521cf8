"""KA308-KA309: Kafka 4's own durability machinery, from the cluster's finalized features.

They skip snapshots whose features were not read (Java or Kafka's jars missing, an older
snapshot, manifests); ``cluster.unreadable`` (KA002) then says so.
"""

from __future__ import annotations

from collections.abc import Iterator

from kaudit.check.findings import Severity, Subject, SubjectKind
from kaudit.check.rules.registry import ClusterContext, Violation, rule

ELR = "eligible.leader.replicas.version"
TRANSACTIONS = "transaction.version"
_SOURCE = "finalized features"


@rule("KA308", "cluster.elr-off", Severity.info,
      "Eligible Leader Replicas (KIP-966) are off on a Kafka 4 cluster.",
      scope="cluster",
      what="Reports Kafka 4.x clusters whose finalized eligible.leader.replicas.version is 0 "
           "(the default for clusters created before 4.1 and upgraded).",
      why="With ELR the high watermark does not advance while the ISR is smaller than "
          "min.insync.replicas, and replicas that leave the ISR stay electable: after the "
          "last in-sync replica fails, a replica holding every acknowledged write can still "
          "lead, where without ELR the partition stays offline (or, with unclean election, "
          "loses acknowledged writes).",
      example="metadata.version 4.0-IV3 with eligible.leader.replicas.version=0.",
      fix="`kafka-features.sh --bootstrap-server B upgrade --feature "
          "eligible.leader.replicas.version=1` once every broker runs 4.0 or newer; note "
          "that min.insync.replicas then can no longer be set per broker.")
def elr_off(ctx: ClusterContext) -> Iterator[Violation]:
    """eligible.leader.replicas.version == 0 on 4.x."""
    version = ctx.snapshot.kafka_version
    level = ctx.snapshot.feature_level(ELR)
    if version is None or version < (4, 0) or level is None or level >= 1:
        return
    metadata = (ctx.snapshot.features or {}).get("metadata.version")
    yield Violation(Subject(SubjectKind.cluster, ctx.snapshot.cluster_id or "cluster"),
                    f"Eligible Leader Replicas are off (metadata.version {metadata}): "
                    "when the last in-sync replica of a partition fails, no other replica may "
                    "take over without risking acknowledged writes.",
                    expected=f"{ELR}=1", actual=f"{ELR}={level}", source=_SOURCE)


@rule("KA309", "cluster.transactions-without-kip890", Severity.warning,
      "Transactions run without KIP-890's defences (transaction.version < 2).",
      scope="cluster",
      what="Reports clusters whose finalized transaction.version is below 2 while audited "
           "topics' profiles demand transactional producers (exactly-once).",
      why="transaction.version=2 is the server side of KIP-890: every transaction gets a new "
          "epoch and partitions are added by the broker, which closes the known causes of "
          "hanging transactions and of the aborted reads and lost writes Jepsen found in "
          "Kafka's transaction protocol. Below it, exactly-once rests on older machinery.",
      example="A cluster upgraded from 3.x to 4.1 keeps transaction.version=0 until it is "
              "upgraded explicitly.",
      fix="`kafka-features.sh --bootstrap-server B upgrade --feature transaction.version=2` "
          "(Kafka 4.0+ brokers; clients need a KIP-890-aware client to benefit fully).")
def transactions_without_kip890(ctx: ClusterContext) -> Iterator[Violation]:
    """transaction.version < 2 where transactions are demanded."""
    level = ctx.snapshot.feature_level(TRANSACTIONS)
    version = ctx.snapshot.kafka_version
    # transaction.version 2 exists from Kafka 4.0: on 3.x there is nothing to finalize.
    if level is None or level >= 2 or version is None or version < (4, 0):
        return
    topics = ctx.transactional_topics
    if not topics and not ctx.thresholds.producer_transactions:
        return
    named = ", ".join(topics[:3]) + (f" and {len(topics) - 3} more" if len(topics) > 3 else "")
    yield Violation(Subject(SubjectKind.cluster, ctx.snapshot.cluster_id or "cluster"),
                    f"transaction.version is {level}, so the transactions of "
                    f"{named or 'the default profile'} run without KIP-890's defences "
                    "against hanging transactions and lost or aborted-but-read writes.",
                    expected=f"{TRANSACTIONS}=2", actual=f"{TRANSACTIONS}={level}",
                    source=_SOURCE)
