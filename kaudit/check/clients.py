"""Producer and consumer configuration files, with the client library's defaults.

A client config is read from a Java-style ``.properties`` file or a flat YAML
mapping. Every value kaudit reasons about is kept with where it came from:
``file:line`` when the file sets it, ``CLIENT_DEFAULT`` when the client
library's default applies. That difference matters: ``enable.idempotence``
is on by default in the Java client (Kafka >= 3.0) but silently switched off
when the file sets a conflicting ``acks``, ``retries`` or
``max.in.flight.requests.per.connection`` without asking for idempotence.

Defaults assumed (say so in findings via ``CLIENT_DEFAULT``):

- ``java``: the Apache Kafka Java client 4.x. acks=all, enable.idempotence=true,
  retries=2147483647, max.in.flight.requests.per.connection=5,
  delivery.timeout.ms=120000, linger.ms=5 (it was 0 before Kafka 4.0),
  request.timeout.ms=30000; consumers isolation.level=read_uncommitted,
  enable.auto.commit=true.
- ``librdkafka`` (confluent-kafka, kcat): acks=all, enable.idempotence=false,
  retries=2147483647, max.in.flight=1000000, delivery.timeout.ms
  (message.timeout.ms)=300000, linger.ms=5, request.timeout.ms=30000;
  consumers isolation.level=read_committed, enable.auto.commit=true.

With ``library="auto"`` (the default) a file is taken as librdkafka when it
uses a key only librdkafka knows (``request.required.acks``, ``max.in.flight``,
``message.timeout.ms``...), as Java otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Literal

from kaudit.cluster.model import ConfigSource
from kaudit.connection.properties import parse_properties
from kaudit.connection.redact import is_secret_key, register_secret
from kaudit.errors import FileInputError
from kaudit.yamlnodes import NodeReader, compose_text, read_text

Role = Literal["producer", "consumer"]
Library = Literal["java", "librdkafka"]
Acks = Literal["0", "1", "all"]

ROLES: tuple[Role, ...] = ("producer", "consumer")
LIBRARIES: tuple[str, ...] = ("auto", "java", "librdkafka")

# librdkafka spellings of the keys kaudit reasons about -> the Java name.
ALIASES: Mapping[str, str] = MappingProxyType({
    "request.required.acks": "acks",
    "max.in.flight": "max.in.flight.requests.per.connection",
    "message.send.max.retries": "retries",
    "message.timeout.ms": "delivery.timeout.ms",
    "queue.buffering.max.ms": "linger.ms",
})

_DEFAULTS: Mapping[str, Mapping[str, str]] = MappingProxyType({
    "java": MappingProxyType({
        "acks": "all",
        "enable.idempotence": "true",
        "retries": "2147483647",
        "max.in.flight.requests.per.connection": "5",
        "delivery.timeout.ms": "120000",
        "linger.ms": "5",
        "request.timeout.ms": "30000",
        "isolation.level": "read_uncommitted",
        "enable.auto.commit": "true",
    }),
    "librdkafka": MappingProxyType({
        "acks": "all",
        "enable.idempotence": "false",
        "retries": "2147483647",
        "max.in.flight.requests.per.connection": "1000000",
        "delivery.timeout.ms": "300000",
        "linger.ms": "5",
        "request.timeout.ms": "30000",
        "isolation.level": "read_committed",
        "enable.auto.commit": "true",
    }),
})

_INT_KEYS = frozenset({"retries", "max.in.flight.requests.per.connection",
                       "delivery.timeout.ms", "linger.ms", "request.timeout.ms"})
_BOOL_KEYS = frozenset({"enable.idempotence", "enable.auto.commit"})
_CHOICES: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "acks": ("all", "-1", "0", "1"),
    "isolation.level": ("read_uncommitted", "read_committed"),
})

# The Java client's idempotence needs these; it refuses to start when
# enable.idempotence=true is set explicitly together with a conflicting value.
IDEMPOTENCE_MAX_IN_FLIGHT = 5


@dataclass(frozen=True)
class ClientSetting:
    """One effective client setting and where it came from."""

    name: str
    """The Java client's name for the key (librdkafka aliases are mapped)."""
    value: str
    source: ConfigSource
    """CLIENT_CONFIG when the file sets it, CLIENT_DEFAULT when the library default applies."""
    where: str
    """``file:line`` for a value from the file, ``CLIENT_DEFAULT`` otherwise."""
    spelled: str
    """The key as written in the file (e.g. ``request.required.acks``)."""

    @property
    def explicit(self) -> bool:
        """True when the file sets this value."""
        return self.source is ConfigSource.CLIENT_CONFIG

    def show(self) -> str:
        """``name=value`` as an operator would write it."""
        return f"{self.spelled}={self.value}"


@dataclass(frozen=True)
class Idempotence:
    """Whether a producer is idempotent, and why."""

    enabled: bool
    explicit: bool
    """True when the file (or a transactional.id) asks for it; False when by default."""
    reason: str
    """A short clause, e.g. 'idempotence silently off because of acks=1 at p.properties:3'."""
    source: str
    """``file:line`` or CLIENT_DEFAULT."""


@dataclass(frozen=True)
class ClientConfig:
    """A producer or consumer configuration with the library's defaults filled in."""

    path: str
    role: Role
    library: Library
    values: Mapping[str, ClientSetting]
    """Effective settings by Java key name; secret keys are never kept."""

    def setting(self, name: str) -> ClientSetting:
        """The effective setting ``name`` (defaults exist for every key kaudit reads)."""
        found = self.values.get(name)
        if found is not None:
            return found
        default = _DEFAULTS[self.library].get(name, "")
        asked = self.values.get("enable.idempotence")
        wants_idempotence = (asked.value == "true" if asked is not None
                             else "transactional.id" in self.values)
        if name == "max.in.flight.requests.per.connection" and wants_idempotence:
            # librdkafka lowers its default (1000000) to 5 when idempotence is asked for.
            default = str(min(int(default), IDEMPOTENCE_MAX_IN_FLIGHT))
        return ClientSetting(name, default, ConfigSource.CLIENT_DEFAULT, "CLIENT_DEFAULT", name)

    def _int(self, name: str) -> int:
        return int(self.setting(name).value)

    def _bool(self, name: str) -> bool:
        return self.setting(name).value.lower() == "true"

    @property
    def acks(self) -> Acks:
        """``0``, ``1`` or ``all`` (``-1`` is all)."""
        value = self.setting("acks").value.lower()
        if value in ("all", "-1"):
            return "all"
        return "0" if value == "0" else "1"

    @property
    def retries(self) -> int:
        """How often a failed send is retried."""
        return self._int("retries")

    @property
    def max_in_flight(self) -> int:
        """max.in.flight.requests.per.connection."""
        return self._int("max.in.flight.requests.per.connection")

    @property
    def delivery_timeout_ms(self) -> int:
        """delivery.timeout.ms (librdkafka message.timeout.ms)."""
        return self._int("delivery.timeout.ms")

    @property
    def linger_ms(self) -> int:
        """linger.ms."""
        return self._int("linger.ms")

    @property
    def request_timeout_ms(self) -> int:
        """request.timeout.ms."""
        return self._int("request.timeout.ms")

    @property
    def transactional_id(self) -> str | None:
        """The transactional.id, or None when the producer is not transactional."""
        found = self.values.get("transactional.id")
        return found.value if found is not None and found.value.strip() else None

    @property
    def read_committed(self) -> bool:
        """True when a consumer skips aborted transactional records."""
        return self.setting("isolation.level").value == "read_committed"

    @property
    def auto_commit(self) -> bool:
        """enable.auto.commit."""
        return self._bool("enable.auto.commit")

    def idempotence_conflicts(self) -> tuple[tuple[ClientSetting, str], ...]:
        """Settings that idempotence cannot work with, each with the value it needs."""
        out: list[tuple[ClientSetting, str]] = []
        if self.acks != "all":
            out.append((self.setting("acks"), "acks=all"))
        if self.retries <= 0:
            out.append((self.setting("retries"), "retries > 0"))
        if self.max_in_flight > IDEMPOTENCE_MAX_IN_FLIGHT:
            out.append((self.setting("max.in.flight.requests.per.connection"),
                        f"max.in.flight.requests.per.connection <= {IDEMPOTENCE_MAX_IN_FLIGHT}"))
        return tuple(out)

    @property
    def idempotence(self) -> Idempotence:
        """Whether the broker will drop this producer's retried duplicates."""
        setting = self.setting("enable.idempotence")
        on = setting.value.lower() == "true"
        if setting.explicit:
            return Idempotence(on, True, f"{setting.show()} at {setting.where}", setting.where)
        if self.transactional_id is not None:
            tid = self.setting("transactional.id")
            return Idempotence(True, True, f"idempotence implied by transactional.id at "
                               f"{tid.where}", tid.where)
        if not on:
            return Idempotence(False, False, f"idempotence off by default in {self.library}",
                               "CLIENT_DEFAULT")
        conflicts = self.idempotence_conflicts()
        if conflicts:
            first, _ = conflicts[0]
            # Kafka >= 3.2 (KAFKA-13598): the default is dropped without a word.
            return Idempotence(False, False, f"idempotence silently off because of "
                               f"{first.show()} at {first.where}", first.where)
        return Idempotence(True, False, f"idempotence on by default in {self.library}",
                           "CLIENT_DEFAULT")


def _canonical(key: str) -> str:
    return ALIASES.get(key, key)


def _check_value(path: str, line: int | None, key: str, value: str) -> str:
    name = _canonical(key)
    if name in _INT_KEYS:
        try:
            int(value.strip())
        except ValueError:
            raise FileInputError(path, line, f"{key} must be an integer, not '{value}'") from None
        return value.strip()
    if name in _BOOL_KEYS:
        if value.strip().lower() not in ("true", "false"):
            raise FileInputError(path, line, f"{key} must be true or false, not '{value}'")
        return value.strip().lower()
    choices = _CHOICES.get(name)
    if choices is not None and value.strip().lower() not in choices:
        raise FileInputError(path, line,
                             f"{key} must be one of {', '.join(choices)}, not '{value}'")
    return value.strip() if choices is not None else value


def build_client_config(path: str, role: Role, entries: Mapping[str, tuple[str, int | None]],
                        library: str = "auto") -> ClientConfig:
    """A ClientConfig from ``{key: (value, line)}`` as read from ``path``.

    Raises :class:`FileInputError` for values kaudit reasons about that a
    client would reject (``acks=2``, ``retries=many``).
    """
    if library not in LIBRARIES:
        raise FileInputError(path, None, f"unknown client library '{library}'",
                             hint=f"one of {', '.join(LIBRARIES)}")
    chosen: Library
    if library == "auto":
        chosen = "librdkafka" if any(key in ALIASES for key in entries) else "java"
    else:
        chosen = "java" if library == "java" else "librdkafka"
    values: dict[str, ClientSetting] = {}
    for key, (raw, line) in entries.items():
        if is_secret_key(key):
            register_secret(raw)
            continue
        name = _canonical(key)
        value = _check_value(path, line, key, raw)
        where = f"{path}:{line}" if line else path
        if name in values and values[name].spelled != key:
            raise FileInputError(path, line, f"{key} sets {name} again (already set as "
                                 f"{values[name].spelled} at {values[name].where})")
        values[name] = ClientSetting(name, value, ConfigSource.CLIENT_CONFIG, where, key)
    return ClientConfig(path=path, role=role, library=chosen, values=MappingProxyType(values))


def parse_client_config(text: str, path: str, role: Role, library: str = "auto") -> ClientConfig:
    """Parse client config text: YAML when ``path`` ends in .yaml/.yml, properties otherwise."""
    if path.lower().endswith((".yaml", ".yml")):
        entries = _yaml_entries(text, path)
    else:
        props = parse_properties(text, path)
        entries = {key: (value, props.line_of(key)) for key, value in props.values.items()}
    return build_client_config(path, role, entries, library)


def load_client_config(path: str | Path, role: Role, library: str = "auto") -> ClientConfig:
    """Read a producer or consumer config file (``.properties`` or ``.yaml``)."""
    return parse_client_config(read_text(path), str(path), role, library)


def _yaml_entries(text: str, path: str) -> dict[str, tuple[str, int | None]]:
    reader = NodeReader(path)
    root = compose_text(text, path)
    if root is None:
        return {}
    out: dict[str, tuple[str, int | None]] = {}
    for key, (key_node, value_node) in reader.mapping(root, "a client config").items():
        line = key_node.start_mark.line + 1
        if value_node.tag.endswith(":bool"):
            value = "true" if reader.boolean(value_node, key) else "false"
        elif value_node.tag.endswith(":null"):
            raise reader.fail(value_node, f"{key} has no value")
        else:
            value = reader.text(value_node, key)
        out[key] = (value, line)
    return out
