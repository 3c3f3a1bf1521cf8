"""The lab's KRaft controller quorum: static (``controller.quorum.voters``, ``kraft.version``
0, Kafka's only kind before 3.9) or dynamic (KIP-853: ``controller.quorum.bootstrap.servers``,
voters formatted with ``--initial-controllers``, ``kraft.version`` 1).

A dynamic quorum's voters are known by id and directory id: each controller's metadata
log directory gets an id of its own at format time, and the voter set recorded in the
log names it. A static quorum's voters are fixed by the configuration alone.
"""

from __future__ import annotations

import uuid
from base64 import urlsafe_b64encode
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum


class Quorum(StrEnum):
    """How the lab's controllers form their quorum."""

    static = "static"
    dynamic = "dynamic"


@dataclass(frozen=True)
class Voter:
    """A controller of the quorum: its node id, port and (dynamic quorum) directory id."""

    id: int
    port: int
    directory_id: str = ""

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.port}"


def kafka_uuid() -> str:
    """A random Kafka ``Uuid`` as Kafka prints it (URL-safe base64, no padding).

    Like Kafka's ``Uuid.randomUuid()``: never one that starts with ``-`` (a command line
    would read it as an option); the ids Kafka reserves (zero, one) are never drawn."""
    while True:
        text = urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def voters(quorum: Quorum, ids_and_ports: Sequence[tuple[int, int]]) -> list[Voter]:
    """The quorum's voters; a dynamic quorum's each with a new directory id."""
    return [Voter(i, port, kafka_uuid() if quorum is Quorum.dynamic else "")
            for i, port in ids_and_ports]


def quorum_properties(quorum: Quorum, members: Sequence[Voter]) -> dict[str, str]:
    """How every node (broker and controller) finds the quorum."""
    if quorum is Quorum.dynamic:
        # The voters themselves are in the metadata log, written at format time.
        return {"controller.quorum.bootstrap.servers": ",".join(v.endpoint for v in members)}
    return {"controller.quorum.voters": ",".join(f"{v.id}@{v.endpoint}" for v in members)}


def format_arguments(quorum: Quorum, role: str, members: Sequence[Voter]) -> list[str]:
    """What ``kafka-storage format`` needs besides the cluster id, for a node of ``role``."""
    if quorum is Quorum.static:
        return []
    if role != "controller":
        return ["--no-initial-controllers"]
    # Every controller is formatted with the same voter set (KIP-853's
    # --initial-controllers): each finds its own entry by node id and takes that
    # directory id for its metadata log.
    return ["--initial-controllers",
            ",".join(f"{v.id}@{v.endpoint}:{v.directory_id}" for v in members)]
