"""The live read-back pass's reader, in a process of its own (``python -m`` this module).

On two cores the probe's one Python thread was its limit: producing, serving the delivery
reports and reading back took turns on it. Here a second process fetches and decodes, and
hands the probe only what the verifier needs, three unsigned 64-bit numbers per message
(:data:`RECORD`), on its stdout: the probe's process keeps the ledger and the verifier,
so nothing about the verdict changes (:class:`kaudit.probe.readback.ReaderProcessPass`).

It reads its settings as one JSON object on stdin (the connection's secrets never reach
argv or the environment), and reads until SIGTERM, until its stdout is closed, or until
the probe that started it is gone.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from array import array
from collections.abc import Callable
from typing import Any

from kaudit.cluster import client
from kaudit.cluster.client import new_consumer
from kaudit.connection.settings import ConnectionSettings
from kaudit.probe.payload import HEADER_SIZE, MAGIC, RUN_AND_SEQUENCE, VERSION

RECORD = 3
"""Numbers per record on the pipe: partition and kind, offset, sequence."""
FOREIGN = 1 << 32
"""Added to the partition: a data message that is not one of this run's (it moves the
read position only)."""
END = 2 << 32
"""Added to the partition: the end of the partition was reached at this offset."""
PARTITION_MASK = (1 << 32) - 1


def consumer_config(transactional: bool, group: str) -> dict[str, Any]:
    """What every read-back consumer is configured with, in this process or its own."""
    return {"group.id": group, "enable.auto.commit": False, "enable.partition.eof": True,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed" if transactional else "read_uncommitted",
            "fetch.max.bytes": 52428800}


def encode_batch(batch: list[Any], run_id: bytes) -> array[int]:
    """One consumed batch as :data:`RECORD` numbers per message (errors other than the end
    of a partition are left out, as the in-process pass leaves them)."""
    out: array[int] = array("Q")
    append = out.append
    eof = client.KafkaError._PARTITION_EOF
    unpack = RUN_AND_SEQUENCE.unpack_from
    for msg in batch:
        err = msg.error()
        if err is not None:
            if err.code() == eof:
                append(msg.partition() + END)
                append(msg.offset())
                append(0)
            continue
        value = msg.value()
        if value is not None and len(value) >= HEADER_SIZE:
            magic, version, rid, seq = unpack(value)
            if magic == MAGIC and version == VERSION and rid == run_id:
                append(msg.partition())
                append(msg.offset())
                append(seq)
                continue
        append(msg.partition() + FOREIGN)
        append(msg.offset())
        append(0)
    return out


def main(read: Callable[[], str] = sys.stdin.read) -> int:
    """Read the settings from stdin, then read the topic until told to stop."""
    config = json.loads(read())
    stopping: list[bool] = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the probe handles Ctrl-C
    conn = ConnectionSettings(config["bootstrap"], dict(config["properties"]),
                              float(config["timeout"]))
    run_id = bytes.fromhex(config["run_id"])
    consumer = new_consumer(conn, None, **consumer_config(config["transactional"],
                                                          config["group"]))
    parent, out = config["parent_pid"], sys.stdout.fileno()
    try:
        consumer.assign([client.TopicPartition(config["topic"], int(p), at)
                         for p, at in config["start_offsets"].items()])
        while not stopping and os.getppid() == parent:
            batch = consumer.consume(num_messages=10000, timeout=0.2)
            if batch:
                data = memoryview(encode_batch(batch, run_id).tobytes())
                while data:
                    data = data[os.write(out, data):]
    except BrokenPipeError:
        pass  # the probe has what it wanted
    finally:
        consumer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
