"""``lab up --broker-config [ID:]KEY=VALUE``: a setting for every broker, or for one.

A setting for one broker is how the lab shows what a partial rollout leaves behind:
brokers whose static files disagree.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from kaudit.errors import InputError

OPTION = "--broker-config"

_ONE_BROKER = re.compile(r"(?P<id>[^:=]*):(?P<rest>.*)")


@dataclass(frozen=True)
class BrokerConfig:
    """What ``--broker-config`` asked: settings for every broker, and per broker id."""

    every: dict[str, str] = field(default_factory=dict)
    by_broker: dict[int, dict[str, str]] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.every or any(self.by_broker.values()))

    def of(self, broker_id: int) -> dict[str, str]:
        """Broker ``broker_id``'s settings: every broker's, then its own over them."""
        return self.every | self.by_broker.get(broker_id, {})

    def per_broker(self, broker_ids: Iterable[int]) -> dict[int, dict[str, str]]:
        """Each broker's own settings, as its ``server.properties`` gets them."""
        return {i: self.of(i) for i in broker_ids}

    def check_ids(self, broker_ids: Sequence[int]) -> None:
        """An input error naming a broker id the lab does not have."""
        for broker_id in sorted(self.by_broker):
            if broker_id not in broker_ids:
                raise InputError(f"{OPTION} {broker_id}:...: the lab has no broker "
                                 f"{broker_id} (its brokers: {_ids(broker_ids)})")

    def to_state(self) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
        """For ``lab.json``: every broker's settings, and each broker's own by id (JSON
        keys are strings)."""
        return dict(self.every), {str(i): dict(c) for i, c in sorted(self.by_broker.items())}

    @classmethod
    def from_state(cls, every: Mapping[str, str],
                   by_broker: Mapping[str, Mapping[str, str]]) -> BrokerConfig:
        """The inverse of :meth:`to_state`."""
        return cls(dict(every), {int(i): dict(c) for i, c in by_broker.items()})


def _ids(ids: Sequence[int]) -> str:
    ordered = sorted(ids)
    if ordered and ordered == list(range(ordered[0], ordered[-1] + 1)) and len(ordered) > 2:
        return f"{ordered[0]}..{ordered[-1]}"
    return ", ".join(str(i) for i in ordered) or "none"


def parse_broker_config(items: Sequence[str]) -> BrokerConfig:
    """Parse repeated ``[ID:]KEY=VALUE`` values; a malformed one is an input error that
    echoes only what comes before ``=`` (the value may be a secret).

    ``ID:`` is told apart by a colon before the first ``=``: no Kafka setting's name has
    one, while values often do (``listeners=PLAINTEXT://127.0.0.1:{port}``)."""
    every: dict[str, str] = {}
    by_broker: dict[int, dict[str, str]] = {}
    for item in items:
        head, sep, value = item.partition("=")
        target = every
        one = _ONE_BROKER.fullmatch(head)
        if one:
            raw_id = one["id"].strip()
            if not raw_id.isdigit() or int(raw_id) < 1:
                raise InputError(f"{OPTION} {head!r}: expected [ID:]KEY=VALUE with ID a "
                                 "broker id (1, 2, ...)")
            target = by_broker.setdefault(int(raw_id), {})
            head = one["rest"]
        key = head.strip()
        if not sep or not key:
            raise InputError(f"{OPTION} {item.split('=')[0]!r}: expected [ID:]KEY=VALUE")
        target[key] = value
    return BrokerConfig(every, by_broker)
