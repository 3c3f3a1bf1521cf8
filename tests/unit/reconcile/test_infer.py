"""The field paths of a sample of JSON values (used to refuse a field no value has)."""

from __future__ import annotations

from kaudit.reconcile.infer import field_paths, not_objects


def test_top_level_and_nested_fields_of_every_object() -> None:
    assert field_paths(['{"id": 1, "o": {"a": {"b": 2}}}', '{"late": null}']) == {
        "id", "o", "o.a", "o.a.b", "late"}


def test_arrays_are_not_descended_and_non_objects_are_skipped() -> None:
    assert field_paths(['{"l": [{"x": 1}]}', "5", "[1, 2]", "not json", b"\xff\xfe", None,
                        b'{"b": true}']) == {"l", "b"}


def test_no_object_no_fields() -> None:
    assert field_paths([]) == set()
    assert field_paths(["oops", "7"]) == set()


def test_values_that_are_no_json_objects_get_a_hint_at_the_format_that_reads_them() -> None:
    framed = b"\x00\x00\x00\x00\x01\x02\x10abc"
    assert not_objects([framed, framed, b"\x01not-framed"]) == (
        "2 of 3 start as Confluent's Avro framing does, a zero byte and a schema id: "
        "--value-format avro reads them")
    assert not_objects(["5", '"x"', "[1]", "2.5", "true"]) == (
        "they are JSON arrays, booleans, numbers, strings: --value-format string compares "
        "each value whole")
    assert not_objects(["5", "oops", b"\xff\xfe"]) == (
        "they are not all JSON: --value-format string or bytes compares each value whole, "
        "avro-plain decodes a bare Avro body")


def test_no_hint_where_some_value_is_an_object_or_there_is_none() -> None:
    assert not_objects(['{"a": 1}', "oops"]) is None
    assert not_objects([None]) is None
    assert not_objects([]) is None
