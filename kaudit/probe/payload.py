"""The probe message value: what every probe message carries, and how to read it back.

Layout (big-endian, :data:`HEADER_SIZE` = 44 bytes, then padding up to the requested size)::

    offset  size  field
         0     3  magic b"KAP"
         3     1  format version (1)
         4    16  run id
        20     8  partition sequence (u64): 0, 1, 2... per partition, per run
        28     8  global sequence (u64): 0, 1, 2... over the whole run
        36     8  send time, ns since the epoch (u64), for end-to-end latency
        44     -  padding: a fixed pseudo-random pattern (not a run of zeros, so that a
                  compressed probe is not unrealistically cheap; batch compression can
                  still find the pattern repeated across messages)

A value shorter than the header, with another magic or version, or ``None`` (a tombstone)
is not a probe value: :func:`decode` returns ``None`` and never raises.

On an existing topic (``--existing``) probe messages also carry the header
:data:`PROBE_HEADER` with the run id in hex (:func:`header_value`), so other consumers
and operators can tell them apart without decoding values.

Speed matters: the producer encodes every message (:func:`encoder` gives a function
that is one precompiled :class:`struct.Struct` pack, padding included), and the
read-back passes unpack only :data:`RUN_AND_SEQUENCE`. The padding for a size is built
once and cached.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Callable
from dataclasses import dataclass

RUN_ID_BYTES = 16
"""Length of a run id (a UUID's 16 bytes)."""

PROBE_HEADER = "kaudit-probe"
"""Kafka message header naming a probe message; its value is the run id in hex."""

MAGIC = b"KAP"
VERSION = 1

_HEADER = struct.Struct(">3sB16sQQQ")
HEADER_SIZE = _HEADER.size
"""Bytes before the padding; the smallest value :func:`encode` produces."""

_PAD_SEED = 0x6B617564  # "kaud": the padding is the same in every process and version
_PADS: dict[int, bytes] = {}


@dataclass(frozen=True, slots=True)
class ProbeRecord:
    """The fields of one decoded probe value."""

    run_id: bytes
    partition_seq: int
    global_seq: int
    sent_ns: int


def _padding(length: int) -> bytes:
    pad = _PADS.get(length)
    if pad is None:
        pad = random.Random(_PAD_SEED).randbytes(length)
        if len(_PADS) < 64:  # a probe uses one size; never let the cache grow unbounded
            _PADS[length] = pad
    return pad


def encode(run_id: bytes, partition_seq: int, global_seq: int, sent_ns: int,
           size: int) -> bytes:
    """The value of one probe message: exactly ``max(size, HEADER_SIZE)`` bytes.

    Raises :class:`ValueError` when ``run_id`` is not :data:`RUN_ID_BYTES` long or a
    number does not fit an unsigned 64-bit field.
    """
    if len(run_id) != RUN_ID_BYTES:
        raise ValueError(f"run id must be {RUN_ID_BYTES} bytes, got {len(run_id)}")
    try:
        header = _HEADER.pack(MAGIC, VERSION, run_id, partition_seq, global_seq, sent_ns)
    except struct.error:
        raise ValueError(
            "partition_seq, global_seq and sent_ns must be integers in [0, 2**64): "
            f"{partition_seq!r}, {global_seq!r}, {sent_ns!r}") from None
    if size <= HEADER_SIZE:
        return header
    return header + _padding(size - HEADER_SIZE)


def encoder(run_id: bytes, size: int) -> Callable[[int, int, int], bytes]:
    """:func:`encode` for one run and size, as a function of (partition_seq, global_seq,
    sent_ns): the producer's per-message path. The run id is checked once; the value is
    one pack of a struct that includes the padding (no concatenation). Same bytes as
    :func:`encode`; a number outside [0, 2**64) raises :class:`struct.error`.
    """
    if len(run_id) != RUN_ID_BYTES:
        raise ValueError(f"run id must be {RUN_ID_BYTES} bytes, got {len(run_id)}")
    pad_len = max(size - HEADER_SIZE, 0)
    pack = struct.Struct(f">3sB16sQQQ{pad_len}s").pack
    pad = _padding(pad_len) if pad_len else b""

    def encode_one(partition_seq: int, global_seq: int, sent_ns: int) -> bytes:
        return pack(MAGIC, VERSION, run_id, partition_seq, global_seq, sent_ns, pad)

    return encode_one


def decode(value: bytes | None) -> ProbeRecord | None:
    """The probe fields of ``value``, or ``None`` when it is not a probe value."""
    if value is None or len(value) < HEADER_SIZE:
        return None
    try:
        magic, version, run_id, partition_seq, global_seq, sent_ns = _HEADER.unpack_from(value)
    except (struct.error, TypeError):
        return None
    if magic != MAGIC or version != VERSION:
        return None
    return ProbeRecord(run_id, partition_seq, global_seq, sent_ns)


def header_value(run_id: bytes) -> bytes:
    """The :data:`PROBE_HEADER` value for a run: the run id in lowercase hex, ASCII."""
    return run_id.hex().encode("ascii")



SEQUENCE_AND_TIME = struct.Struct(">Q8xQ")
"""Partition sequence and send time, unpacked in place from :data:`SEQUENCE_OFFSET`
(``SEQUENCE_AND_TIME.unpack_from(value, SEQUENCE_OFFSET)``): the delivery callback's
per-message read, inlined where every call counts (see :func:`sequence_and_time`)."""
SEQUENCE_OFFSET = 3 + 1 + RUN_ID_BYTES
_SEQ_AND_TIME, _SEQ_OFFSET = SEQUENCE_AND_TIME, SEQUENCE_OFFSET

RUN_AND_SEQUENCE = struct.Struct(">3sB16sQ")
"""Magic, version, run id and partition sequence: what the read-back passes need of a
value, unpacked in one call (no :class:`ProbeRecord` per message). Callers check the
length (at least :data:`HEADER_SIZE`), magic and version themselves, as :func:`decode`
does."""


def sequence_and_time(value: bytes) -> tuple[int, int]:
    """Partition sequence and send time of a value this process encoded itself.

    The producer's delivery callback runs once per message: reading two fields
    in place costs a fraction of a full :func:`decode`. Only for values known to
    come from :func:`encode`.
    """
    seq, sent_ns = _SEQ_AND_TIME.unpack_from(value, _SEQ_OFFSET)
    return int(seq), int(sent_ns)
