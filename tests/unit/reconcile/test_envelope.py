"""Debezium change events on the driver: the field check's sample and the mode they imply."""

from __future__ import annotations

import json

import pytest

from kaudit.errors import InputError
from kaudit.reconcile.envelope import check_events, connect_rows, event_context, unwrap
from kaudit.reconcile.formats import mode_for


def test_the_sample_gives_the_rows_events_leave_wrapped_or_bare() -> None:
    bare = json.dumps({"before": None, "after": {"id": 1, "amount": 2.5}, "op": "c"})
    wrapped = json.dumps({"schema": {"type": "struct"}, "payload": {
        "before": {"id": 2, "note": {"code": "x"}}, "after": None, "op": "d"}})
    rows = check_events("t", [bare.encode(), wrapped, None, b"not json"])
    assert [json.loads(r) for r in rows] == [{"id": 1, "amount": 2.5},
                                             {"id": 2, "note": {"code": "x"}}]


def test_a_sampled_value_without_op_is_exit_2() -> None:
    with pytest.raises(InputError) as err:
        check_events("orders", [json.dumps({"id": 1, "amount": 3})])
    assert err.value.message.startswith('topic orders: a sampled value has no "op": not a '
                                        'Debezium change event ({"id": 1')


def test_only_a_schema_and_payload_pair_is_connects_wrapper() -> None:
    assert unwrap({"payload": {"op": "c"}}) == {"payload": {"op": "c"}}  # a field named so
    assert unwrap({"schema": {}, "payload": {"op": "c"}}) == {"op": "c"}


@pytest.mark.parametrize(("envelope", "mode", "value_format", "expected"), [
    ("debezium", None, "json", "upsert"), ("debezium", "upsert", "avro", "upsert"),
    ("none", None, "json", "append"), ("none", "coordinates", "json", "coordinates")])
def test_the_mode_an_envelope_implies(envelope: str, mode: str | None, value_format: str,
                                      expected: str) -> None:
    assert mode_for(envelope, mode, value_format) == expected


def test_debezium_refuses_any_mode_but_upsert() -> None:
    for mode in ("append", "coordinates"):
        with pytest.raises(InputError, match=f"implies --mode upsert, not {mode}"):
            mode_for("debezium", mode)


def test_a_samples_event_says_when_and_in_which_transaction() -> None:
    event = {"before": None, "after": {"id": 1}, "op": "c", "ts_ms": 20,
             "source": {"ts_ms": 10, "lsn": 5}, "transaction": {"id": "t1", "total_order": 3}}
    wrapped = json.dumps({"schema": {}, "payload": event}).encode()
    assert event_context(wrapped) == {"op": "c", "ts_ms": 20, "source_ts_ms": 10,
                                      "transaction": {"id": "t1", "total_order": 3}}
    assert event_context(json.dumps({"op": "d"})) == {
        "op": "d", "ts_ms": None, "source_ts_ms": None, "transaction": None}
    assert event_context(None) is None and event_context(b"{not json") is None
    assert event_context(json.dumps({"id": 1})) is None


def test_connects_wrapper_gives_its_payload_and_a_bare_value_stays() -> None:
    wrapped = json.dumps({"schema": {"type": "struct", "fields": []},
                          "payload": {"id": 1, "status": "new"}})
    bare = json.dumps({"id": 2})
    assert connect_rows([wrapped.encode(), bare, None, b"\xff"]) == [
        json.dumps({"id": 1, "status": "new"}), json.dumps({"id": 2})]


def test_connects_wrapper_is_json_only() -> None:
    assert mode_for("connect", None, "json") == "append"
    assert mode_for("connect", "upsert", "json") == "upsert"
    with pytest.raises(InputError) as err:
        mode_for("connect", None, "avro")
    assert "needs --value-format json, not avro" in err.value.message
