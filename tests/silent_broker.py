"""A broker that accepts connections and never answers, as a frozen (SIGSTOPped) Kafka
broker does: the kernel completes the handshake into the listening socket's backlog, and
nothing ever reads or writes. Every read that must stay bounded while brokers are frozen
is tested against one."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager

from kaudit.cluster.model import Broker


@contextmanager
def silent_broker(broker_id: int = 1) -> Iterator[Broker]:
    """A broker on a free loopback port that never answers, until the block ends."""
    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    listening.listen(8)
    try:
        yield Broker(broker_id, "127.0.0.1", listening.getsockname()[1])
    finally:
        listening.close()
