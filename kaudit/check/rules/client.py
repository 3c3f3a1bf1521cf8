"""KA4xx: producer and consumer configs, alone and against the topics they write."""

from __future__ import annotations

from collections.abc import Iterator

from kaudit.check.clients import ClientConfig
from kaudit.check.findings import Severity, Subject, SubjectKind
from kaudit.check.rules.common import durability
from kaudit.check.rules.registry import ClientContext, TopicContext, Violation, rule
from kaudit.cluster.model import Topic


def client_subject(client: ClientConfig) -> Subject:
    """The subject of a finding about a client config file."""
    return Subject(SubjectKind.client, client.path)


def _demand(ctx: ClientContext) -> str:
    return f"topics audited as {ctx.profile_label}"


@rule("KA401", "producer.acks", Severity.error,
      "The producer's acks is weaker than its topics' profile allows.", scope="client",
      role="producer",
      what="Compares the producer's effective `acks` (set, or the client default) with the "
           "weakest acks the profiles of its topics allow (`producer_acks`).",
      why="acks=0 is told 'success' when the record is in the send buffer; acks=1 when the "
          "leader has it. Either loses acknowledged data when a broker fails.",
      example="`acks=1` in a producer writing `durable` topics.",
      fix="Set `acks=all` (the default of the Java client since Kafka 3.0).")
def producer_acks(client: ClientConfig, ctx: ClientContext) -> Iterator[Violation]:
    """acks weaker than producer_acks."""
    if not ctx.thresholds.acks_at_least(client.acks):
        setting = client.setting("acks")
        loses = ("any network error or broker failure loses records" if client.acks == "0"
                 else "a leader failure loses records before followers copy them")
        yield Violation(client_subject(client),
                        f"Producer {client.path} uses acks={client.acks} but "
                        f"{_demand(ctx)} need acks={ctx.thresholds.producer_acks}: {loses}.",
                        expected=f"acks={ctx.thresholds.producer_acks}",
                        actual=f"acks={setting.value}", source=setting.where)


@rule("KA402", "producer.idempotence", Severity.error,
      "The producer is not idempotent although its topics' profile requires it.",
      scope="client", role="producer",
      what="Works out whether the producer is idempotent: explicitly, by default (Java client "
           ">= 3.0), or silently not, because a conflicting acks, retries or "
           "max.in.flight.requests.per.connection switched the default off (or the library's "
           "default is off, as in librdkafka).",
      why="Without idempotence a retried send after a lost response writes the record twice; "
          "retries and reordering also break ordering when several requests are in flight.",
      example="A Java producer with `acks=1` and no `enable.idempotence`: the default is "
              "dropped without a warning.",
      fix="Set `enable.idempotence=true` explicitly with `acks=all`, `retries` > 0 and "
          "`max.in.flight.requests.per.connection` <= 5.")
def producer_idempotence(client: ClientConfig, ctx: ClientContext) -> Iterator[Violation]:
    """Idempotence required but off (explicitly, silently, or by library default)."""
    state = client.idempotence
    if ctx.thresholds.producer_idempotence and not state.enabled:
        yield Violation(client_subject(client),
                        f"Producer {client.path} is not idempotent ({state.reason}), but "
                        f"{_demand(ctx)} need it, so retries can write duplicates.",
                        expected="enable.idempotence=true", actual="off", source=state.source)


@rule("KA403", "producer.idempotence-prerequisites", Severity.error,
      "The producer asks for idempotence with settings it cannot work with.", scope="client",
      role="producer",
      what="When idempotence is requested explicitly (`enable.idempotence=true`, or a "
           "`transactional.id`), checks its prerequisites: acks=all, retries > 0, "
           "max.in.flight.requests.per.connection <= 5, and idempotence not switched off.",
      why="The client refuses to start with such a config (ConfigException in Java, a "
          "configuration error in librdkafka), so the application fails at deploy time.",
      example="`enable.idempotence=true` together with `acks=1`.",
      fix="Set `acks=all`, leave `retries` at its default and keep "
          "`max.in.flight.requests.per.connection` at 5 or less.")
def idempotence_prerequisites(client: ClientConfig, ctx: ClientContext) -> Iterator[Violation]:
    """Explicit idempotence with conflicting settings."""
    state = client.idempotence
    explicit_off = client.setting("enable.idempotence")
    if client.transactional_id is not None and explicit_off.explicit and not state.enabled:
        yield Violation(client_subject(client),
                        f"Producer {client.path} sets a transactional.id but "
                        f"{explicit_off.show()}, so the client refuses to start.",
                        expected="enable.idempotence=true", actual=explicit_off.show(),
                        source=explicit_off.where)
        return
    if not (state.enabled and state.explicit):
        return
    for setting, needed in client.idempotence_conflicts():
        yield Violation(client_subject(client),
                        f"Producer {client.path} asks for idempotence but has "
                        f"{setting.show()}, so the client refuses to start.",
                        expected=needed, actual=setting.show(), source=setting.where)


@rule("KA404", "producer.retries", Severity.error,
      "The producer never retries a failed send: at most once.", scope="client",
      role="producer",
      what="Reports `retries=0` unless every topic of the producer accepts loss.",
      why="A send that fails on a leader change or a timeout is dropped: the producer gives at "
          "most once delivery.",
      example="`retries=0` copied from an old tuning guide.",
      fix="Remove `retries` (the default retries until `delivery.timeout.ms`) and enable "
          "idempotence so retries do not duplicate.")
def producer_retries(client: ClientConfig, ctx: ClientContext) -> Iterator[Violation]:
    """retries=0 where loss is not accepted."""
    if client.retries <= 0 and not ctx.thresholds.loss_accepted:
        setting = client.setting("retries")
        yield Violation(client_subject(client),
                        f"Producer {client.path} never retries ({setting.show()}), so a send "
                        "that fails once is lost: at most once.",
                        expected="retries > 0", actual=setting.show(), source=setting.where)


@rule("KA405", "producer.transactional-id", Severity.error,
      "The producer has no transactional.id although its topics need exactly once.",
      scope="client", role="producer",
      what="Reports producers without `transactional.id` when a profile of their topics "
           "requires transactions (`exactly-once`).",
      why="Idempotence alone holds for one producer session: a restarted producer gets a new "
          "id and may write again what it wrote before. Transactions also commit consumed "
          "offsets atomically with the output.",
      example="A stream processor writing `exactly-once` topics with only "
              "`enable.idempotence=true`.",
      fix="Set a stable `transactional.id` per producer instance and use the transactional API "
          "(or `processing.guarantee=exactly_once_v2` in Kafka Streams).")
def transactional_id(client: ClientConfig, ctx: ClientContext) -> Iterator[Violation]:
    """No transactional.id where transactions are required."""
    if ctx.thresholds.producer_transactions and client.transactional_id is None:
        yield Violation(client_subject(client),
                        f"Producer {client.path} sets no transactional.id but "
                        f"{_demand(ctx)} need transactions for exactly-once delivery.",
                        expected="transactional.id set", actual="not set",
                        source="CLIENT_DEFAULT")


@rule("KA406", "producer.delivery-timeout", Severity.error,
      "delivery.timeout.ms is shorter than linger.ms + request.timeout.ms.", scope="client",
      role="producer",
      what="Checks `delivery.timeout.ms >= linger.ms + request.timeout.ms` "
           "(librdkafka: message.timeout.ms, queue.buffering.max.ms).",
      why="A record can expire before its first request has even timed out, so sends fail "
          "without a real retry; the Java client refuses to start when delivery.timeout.ms is "
          "set that low explicitly.",
      example="`delivery.timeout.ms=20000` with the default `request.timeout.ms=30000`.",
      fix="Raise `delivery.timeout.ms` (default 120000) or lower `request.timeout.ms`.")
def delivery_timeout(client: ClientConfig, ctx: ClientContext) -> Iterator[Violation]:
    """delivery.timeout.ms < linger.ms + request.timeout.ms."""
    needed = client.linger_ms + client.request_timeout_ms
    if client.delivery_timeout_ms < needed:
        setting = client.setting("delivery.timeout.ms")
        yield Violation(client_subject(client),
                        f"Producer {client.path} has {setting.show()}, shorter than linger.ms + "
                        f"request.timeout.ms = {needed}, so records can expire before a send "
                        "is retried.",
                        expected=f">= {needed}", actual=setting.value, source=setting.where)


@rule("KA407", "consumer.isolation-level", Severity.error,
      "The consumer reads uncommitted transactional records.", scope="client",
      role="consumer",
      what="Reports consumers with `isolation.level=read_uncommitted` (set, or the Java "
           "default) when a profile of their topics needs read_committed (`exactly-once`).",
      why="read_uncommitted consumers also see records of aborted transactions, so exactly-once "
          "producers give duplicates and phantom records end to end.",
      example="A Java consumer of `exactly-once` topics without `isolation.level`.",
      fix="Set `isolation.level=read_committed`.")
def isolation_level(client: ClientConfig, ctx: ClientContext) -> Iterator[Violation]:
    """read_uncommitted where read_committed is needed."""
    if ctx.thresholds.consumer_read_committed and not client.read_committed:
        setting = client.setting("isolation.level")
        yield Violation(client_subject(client),
                        f"Consumer {client.path} uses {setting.show()} ({setting.where}) but "
                        f"{_demand(ctx)} need read_committed, so it sees aborted records.",
                        expected="isolation.level=read_committed", actual=setting.show(),
                        source=setting.where)


@rule("KA408", "consumer.auto-commit", Severity.error,
      "The consumer commits offsets automatically, before processing is known to be done.",
      scope="client", role="consumer",
      what="Reports `enable.auto.commit=true` (set, or the default) when a profile of the "
           "consumer's topics needs manual commits (`exactly-once`).",
      why="Auto-commit commits on a timer, independent of processing: a crash after a commit "
          "but before processing skips records (at most once), and one before the commit "
          "reprocesses them.",
      example="A consumer of `exactly-once` topics without `enable.auto.commit`.",
      fix="Set `enable.auto.commit=false` and commit after processing, or send offsets in the "
          "producer's transaction (`sendOffsetsToTransaction`).")
def auto_commit(client: ClientConfig, ctx: ClientContext) -> Iterator[Violation]:
    """enable.auto.commit=true where manual commits are needed."""
    if ctx.thresholds.consumer_manual_commit and client.auto_commit:
        setting = client.setting("enable.auto.commit")
        yield Violation(client_subject(client),
                        f"Consumer {client.path} commits offsets automatically "
                        f"({setting.show()}, {setting.where}) but {_demand(ctx)} need commits "
                        "after processing.",
                        expected="enable.auto.commit=false", actual=setting.show(),
                        source=setting.where)


@rule("KA409", "producer.acks-all-without-replicas", Severity.warning,
      "The producer uses acks=all but the topic makes it no safer than acks=1.", scope="pair",
      role="producer",
      what="For each producer and topic it writes: acks=all while the topic has "
           "min.insync.replicas=1 or replication factor 1.",
      why="acks=all waits for the ISR, and the ISR may be the leader alone: the write is then "
          "acknowledged by one broker and lost with it, exactly as with acks=1.",
      example="A producer with `acks=all` writing a topic that inherits min.insync.replicas=1.",
      fix="Set min.insync.replicas=2 (and RF >= 3) on the topic; acks=all alone is not "
          "enough.")
def acks_all_without_replicas(client: ClientConfig, topic: Topic,
                              ctx: TopicContext) -> Iterator[Violation]:
    """acks=all on a topic with min.isr=1 or RF=1."""
    if client.acks != "all":
        return
    d = durability(topic, ctx.snapshot)
    if d.min_isr <= 1 or d.replication_factor <= 1:
        why = (f"replication factor {d.replication_factor}" if d.replication_factor <= 1
               else f"min.insync.replicas={d.min_isr}")
        yield Violation(Subject(SubjectKind.client, f"{client.path} -> {topic.name}"),
                        f"Producer {client.path} uses acks=all but topic {topic.name} has "
                        f"{why}, so a write acknowledged by the leader alone is lost with it, "
                        "as with acks=1.",
                        expected="min.insync.replicas >= 2 and RF >= 2",
                        actual=f"min.insync.replicas={d.min_isr}, RF={d.replication_factor}",
                        source=(d.min_isr_value.source.value if d.replication_factor > 1
                                else "replication factor"),
                        topic=topic.name)
