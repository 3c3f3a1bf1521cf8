"""The probe value: exact sizes, round trips, and garbage rejected without raising."""

from __future__ import annotations

import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kaudit.probe.payload import (
    HEADER_SIZE,
    MAGIC,
    PROBE_HEADER,
    RUN_AND_SEQUENCE,
    RUN_ID_BYTES,
    VERSION,
    ProbeRecord,
    decode,
    encode,
    encoder,
    header_value,
)

RUN = bytes(range(16))
U64 = st.integers(min_value=0, max_value=2**64 - 1)


def test_header_layout_constants() -> None:
    assert RUN_ID_BYTES == 16
    assert HEADER_SIZE == 44
    assert PROBE_HEADER == "kaudit-probe"
    assert header_value(RUN) == RUN.hex().encode()


@pytest.mark.parametrize("size", [0, 1, 43, 44, 45, 100, 1000, 65536])
def test_value_has_exactly_the_requested_size(size: int) -> None:
    value = encode(RUN, 7, 21, 1_700_000_000_000_000_000, size)
    assert len(value) == max(size, HEADER_SIZE)
    assert value[:3] == MAGIC and value[3] == VERSION
    assert decode(value) == ProbeRecord(RUN, 7, 21, 1_700_000_000_000_000_000)


@given(run_id=st.binary(min_size=16, max_size=16), pseq=U64, gseq=U64, sent=U64,
       size=st.integers(0, 2000))
def test_round_trip(run_id: bytes, pseq: int, gseq: int, sent: int, size: int) -> None:
    value = encode(run_id, pseq, gseq, sent, size)
    assert len(value) == max(size, HEADER_SIZE)
    assert decode(value) == ProbeRecord(run_id, pseq, gseq, sent)


@given(run_id=st.binary(min_size=16, max_size=16), pseq=U64, gseq=U64, sent=U64,
       size=st.integers(0, 2000))
def test_encoder_matches_encode_and_the_prefix_unpacks(run_id: bytes, pseq: int, gseq: int,
                                                       sent: int, size: int) -> None:
    value = encoder(run_id, size)(pseq, gseq, sent)
    assert value == encode(run_id, pseq, gseq, sent, size)
    assert RUN_AND_SEQUENCE.unpack_from(value) == (MAGIC, VERSION, run_id, pseq)


def test_encoder_checks_the_run_id_once() -> None:
    with pytest.raises(ValueError, match="16 bytes"):
        encoder(b"short", 100)


def test_padding_is_deterministic_and_not_trivially_compressible() -> None:
    a = encode(RUN, 0, 0, 0, 1000)
    b = encode(RUN, 0, 0, 0, 1000)
    assert a == b
    assert a[HEADER_SIZE:] != bytes(1000 - HEADER_SIZE)
    assert len(zlib.compress(a)) > 900


@pytest.mark.parametrize("value", [
    None, b"", b"KAP", b"KAP\x01" + bytes(39),  # one byte short
    b"XAP\x01" + bytes(60),  # wrong magic
    b"KAP\x02" + bytes(60),  # unknown version
    b'{"json": "value", "from": "another producer", "padding": "......."}',
])
def test_not_a_probe_value(value: bytes | None) -> None:
    assert decode(value) is None


@given(st.binary(max_size=200))
def test_decode_never_raises(value: bytes) -> None:
    record = decode(value)
    if record is not None:
        assert value[:4] == MAGIC + bytes([VERSION]) and len(value) >= HEADER_SIZE


@pytest.mark.parametrize(("run_id", "pseq", "gseq", "sent"), [
    (bytes(15), 0, 0, 0), (bytes(17), 0, 0, 0), (RUN, -1, 0, 0), (RUN, 0, 2**64, 0),
    (RUN, 0, 0, -5),
])
def test_encode_rejects_bad_fields(run_id: bytes, pseq: int, gseq: int, sent: int) -> None:
    with pytest.raises(ValueError):
        encode(run_id, pseq, gseq, sent, 100)


def test_record_is_frozen() -> None:
    record = ProbeRecord(RUN, 1, 2, 3)
    with pytest.raises(AttributeError):
        record.partition_seq = 5  # type: ignore[misc]
