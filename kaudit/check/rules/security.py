"""KA5xx: who can reach the cluster and what they may do there.

Brokers report their listeners, SASL mechanisms and authorizer through
DescribeConfigs. Kafka hides the value of any setting it does not define
itself (``allow.everyone.if.no.acl.found``) and of ``super.users``; those
rules then say what they could and could not see.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from dataclasses import dataclass

from kaudit.check.clients import ClientConfig
from kaudit.check.findings import Severity, Subject, SubjectKind
from kaudit.check.rules.client import client_subject
from kaudit.check.rules.common import as_bool, broker_values, provenance, where_on
from kaudit.check.rules.registry import ClientContext, ClusterContext, Violation, rule
from kaudit.cluster.model import ClusterSnapshot, ConfigMap, ConfigSource, ConfigValue

_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


@dataclass(frozen=True)
class Listener:
    """One entry of a broker's ``listeners``."""

    name: str
    host: str
    port: str
    protocol: str

    @property
    def loopback(self) -> bool:
        """Reachable only from the broker's own machine."""
        host = self.host.strip("[]")
        if host == "localhost":
            return True
        try:
            return ipaddress.ip_address(host).is_loopback
        except ValueError:
            return False  # a host name, or empty (every interface)

    @property
    def shown(self) -> str:
        return f"{self.name}://{self.host}:{self.port} ({self.protocol})"


def parse_listeners(listeners: str, protocol_map: str | None) -> list[Listener]:
    """Listeners with their security protocols (names map to themselves by default)."""
    mapping = {p: p for p in _PROTOCOLS}
    for pair in (protocol_map or "").split(","):
        name, sep, proto = pair.strip().partition(":")
        if sep:
            mapping[name.strip().upper()] = proto.strip().upper()
    out = []
    for item in listeners.split(","):
        name, sep, address = item.strip().partition("://")
        if not sep:
            continue
        host, _, port = address.rpartition(":")
        out.append(Listener(name.upper(), host, port, mapping.get(name.upper(), name.upper())))
    return out


def _broker_listeners(snapshot: ClusterSnapshot) -> Iterator[tuple[Subject, list[Listener]]]:
    for broker_id, configs in sorted(snapshot.broker_configs.items()):
        listeners = configs.get("listeners")
        if listeners is None or not listeners.value:
            continue
        mapping = configs.get("listener.security.protocol.map")
        yield (Subject(SubjectKind.broker, str(broker_id)),
               parse_listeners(listeners.value, mapping.value if mapping else None))


@rule("KA501", "security.plaintext-listener", Severity.error,
      "A broker accepts unencrypted connections from other machines.", scope="cluster",
      what="Reads each broker's `listeners` and `listener.security.protocol.map` and reports "
           "every PLAINTEXT or SASL_PLAINTEXT listener bound to anything but a loopback "
           "address (an empty host or 0.0.0.0 means every interface).",
      why="Records, offsets and, with SASL_PLAINTEXT, credentials cross the network in clear "
          "text; anyone on the path can read them or inject traffic.",
      example="`listeners=PLAINTEXT://0.0.0.0:9092`.",
      fix="Serve clients on SSL or SASL_SSL listeners; keep a PLAINTEXT listener, if at all, "
          "on 127.0.0.1 for local tools.")
def plaintext_listener(ctx: ClusterContext) -> Iterator[Violation]:
    """PLAINTEXT / SASL_PLAINTEXT on a non-loopback address."""
    for subject, listeners in _broker_listeners(ctx.snapshot):
        for listener in listeners:
            if listener.protocol in ("PLAINTEXT", "SASL_PLAINTEXT") and not listener.loopback:
                where = ("every interface" if listener.host.strip("[]") in ("", "0.0.0.0", "::")
                         else listener.host)
                yield Violation(subject,
                                f"Listener {listener.shown} on broker {subject.name} takes "
                                f"unencrypted connections on {where}.",
                                expected="SSL or SASL_SSL", actual=listener.protocol,
                                source="listeners")


def _mechanisms(configs: ConfigMap, listener: Listener) -> set[str]:
    own = configs.get(f"listener.name.{listener.name.lower()}.sasl.enabled.mechanisms")
    chosen = own if own is not None and own.value else configs.get("sasl.enabled.mechanisms")
    raw = chosen.value if chosen is not None and chosen.value else "GSSAPI"
    return {m.strip().upper() for m in raw.split(",") if m.strip()}


@rule("KA502", "security.sasl-plain-without-tls", Severity.error,
      "Passwords are sent in clear text: SASL PLAIN on a listener without TLS.",
      scope="cluster",
      what="Reports every SASL_PLAINTEXT listener whose enabled SASL mechanisms "
           "(`listener.name.<name>.sasl.enabled.mechanisms`, else `sasl.enabled.mechanisms`) "
           "include PLAIN.",
      why="The PLAIN mechanism sends the password itself; without TLS anyone who can see the "
          "traffic can log in as that user.",
      example="`listener.security.protocol.map=EXTERNAL:SASL_PLAINTEXT` with "
              "`sasl.enabled.mechanisms=PLAIN`.",
      fix="Move the listener to SASL_SSL, or use SCRAM-SHA-512 (which never sends the "
          "password) and still prefer TLS.")
def sasl_plain_without_tls(ctx: ClusterContext) -> Iterator[Violation]:
    """PLAIN enabled on SASL_PLAINTEXT listeners."""
    for subject, listeners in _broker_listeners(ctx.snapshot):
        configs = ctx.snapshot.broker_configs[int(subject.name)]
        for listener in listeners:
            if listener.protocol == "SASL_PLAINTEXT" and "PLAIN" in _mechanisms(configs, listener):
                yield Violation(subject,
                                f"Listener {listener.shown} on broker {subject.name} accepts "
                                "SASL PLAIN without TLS: passwords cross the network in clear.",
                                expected="SASL_SSL or no PLAIN", actual="PLAIN over "
                                "SASL_PLAINTEXT", source="sasl.enabled.mechanisms")


@rule("KA503", "security.no-authorizer", Severity.warning,
      "No authorizer: every client that can connect may do anything.", scope="cluster",
      what="Checks the brokers' `authorizer.class.name`.",
      why="Without an authorizer ACLs are not enforced: any client that can connect can "
          "delete topics, change configs, read every topic and write into any of them.",
      example="A broker with no `authorizer.class.name` (Kafka's default).",
      fix="Set `authorizer.class.name` to KRaft's StandardAuthorizer (class `StandardAuthorizer` "
          "in package `org.apache.kafka.metadata.authorizer`) on brokers and controllers, then "
          "grant ACLs per principal.")
def no_authorizer(ctx: ClusterContext) -> Iterator[Violation]:
    """authorizer.class.name empty."""
    name = "authorizer.class.name"
    reported = {bid: c[name] for bid, c in sorted(ctx.snapshot.broker_configs.items())
                if name in c}
    without = {bid: v for bid, v in reported.items() if not (v.value or "").strip()}
    # Nothing when brokers are unknown (manifests) or every broker has one.
    for subject, value in _subjects(ctx.snapshot, without):
        yield Violation(subject,
                        f"No authorizer on {where_on(subject)} ({provenance(value)}): ACLs are "
                        "not enforced, so any client that connects may read, write, delete "
                        "topics and change configs.",
                        expected="an authorizer", actual="none", source=value.source.value)


def _subjects(snapshot: ClusterSnapshot,
              found: dict[int, ConfigValue]) -> list[tuple[Subject, ConfigValue]]:
    """One cluster subject when every broker is in ``found``, else one per broker."""
    if found and len(found) == len(snapshot.broker_configs):
        return [(Subject(SubjectKind.cluster, snapshot.cluster_id or "cluster"),
                 next(iter(found.values())))]
    return [(Subject(SubjectKind.broker, str(bid)), v) for bid, v in sorted(found.items())]


def _hidden(snapshot: ClusterSnapshot, name: str) -> dict[int, ConfigValue]:
    """Brokers where ``name`` is set but the broker does not show its value."""
    return {bid: value for bid, configs in snapshot.broker_configs.items()
            if (value := configs.get(name)) is not None and value.value is None
            and value.source is not ConfigSource.DEFAULT_CONFIG}


@rule("KA504", "security.allow-everyone-if-no-acl", Severity.error,
      "Resources without ACLs are open to every principal.", scope="cluster",
      what="Checks `allow.everyone.if.no.acl.found` on the brokers. Kafka reports this "
           "setting's value as hidden (it is the authorizer's, not the broker's); kaudit then "
           "reports that it is set and cannot be judged, as an unreadable finding (KA002).",
      why="With it true, a topic or group nobody wrote an ACL for is readable and writable by "
          "anyone who can connect, including anonymous PLAINTEXT clients: a new topic is "
          "public until someone remembers to lock it.",
      example="`allow.everyone.if.no.acl.found=true` in server.properties.",
      fix="Remove it (the default is false) and grant ACLs for the principals that need "
          "access.")
def allow_everyone(ctx: ClusterContext) -> Iterator[Violation]:
    """allow.everyone.if.no.acl.found=true."""
    name = "allow.everyone.if.no.acl.found"
    for subject, value in broker_values(ctx.snapshot, name):
        if value.value is not None and as_bool(value):
            yield Violation(subject,
                            f"{name}=true on {where_on(subject)} ({provenance(value)}): every "
                            "resource without an ACL is open to every principal.",
                            expected="false", actual="true", source=value.source.value)


@rule("KA505", "security.super-users", Severity.info,
      "Some principals bypass every ACL.", scope="cluster",
      what="Reports `super.users` when the brokers set it, with the principals when the "
           "broker shows them (it usually hides the list).",
      why="A super user skips authorization entirely. The list should be short and known: "
          "the brokers' own principal and a break-glass admin, not application users.",
      example="`super.users=User:admin;User:orders-service`.",
      fix="Keep only the inter-broker principal and an admin used by people, and give "
          "applications ACLs instead.")
def super_users(ctx: ClusterContext) -> Iterator[Violation]:
    """super.users set."""
    name = "super.users"
    for subject, value in broker_values(ctx.snapshot, name):
        if value.value:
            principals = [p.strip() for p in value.value.split(";") if p.strip()]
            yield Violation(subject,
                            f"{len(principals)} super user(s) on {where_on(subject)} bypass "
                            f"every ACL: {', '.join(principals)}.",
                            expected="a short, known list", actual=value.value,
                            source=value.source.value)
    for subject, value in _subjects(ctx.snapshot, _hidden(ctx.snapshot, name)):
        yield Violation(subject,
                        f"super.users is set on {where_on(subject)} ({provenance(value)}); the "
                        "broker hides the list. Those principals bypass every ACL.",
                        expected="a short, known list", actual="set (hidden)",
                        source=value.source.value)


@rule("KA506", "client.tls-hostname-verification-off", Severity.error,
      "The client does not check that the broker's certificate is for the broker's name.",
      scope="client",
      what="Reports a producer or consumer config that sets "
           "`ssl.endpoint.identification.algorithm` to empty or `none`.",
      why="TLS without host name verification accepts any certificate the CA ever signed, so "
          "a machine in the middle with one can read and alter the traffic, credentials "
          "included.",
      example="`ssl.endpoint.identification.algorithm=` in a client.properties.",
      fix="Remove the line (the default is `https` in the Java client and librdkafka >= 2.0) "
          "and give brokers certificates whose subject alternative names match their "
          "advertised host names.")
def tls_hostname_verification_off(client: ClientConfig,
                                  ctx: ClientContext) -> Iterator[Violation]:
    """ssl.endpoint.identification.algorithm disabled."""
    setting = client.values.get("ssl.endpoint.identification.algorithm")
    if setting is not None and setting.value.strip().lower() in ("", "none"):
        yield Violation(client_subject(client),
                        f"{client.role.capitalize()} {client.path} turns off TLS host name "
                        f"verification ({setting.show()}): any "
                        "certificate from the CA is accepted for any broker.",
                        expected="https", actual=setting.value or "(empty)",
                        source=setting.where)
