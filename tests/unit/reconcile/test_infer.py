"""The field paths of a sample of JSON values (used to refuse a field no value has)."""

from __future__ import annotations

from kaudit.reconcile.infer import field_paths


def test_top_level_and_nested_fields_of_every_object() -> None:
    assert field_paths(['{"id": 1, "o": {"a": {"b": 2}}}', '{"late": null}']) == {
        "id", "o", "o.a", "o.a.b", "late"}


def test_arrays_are_not_descended_and_non_objects_are_skipped() -> None:
    assert field_paths(['{"l": [{"x": 1}]}', "5", "[1, 2]", "not json", b"\xff\xfe", None,
                        b'{"b": true}']) == {"l", "b"}


def test_no_object_no_fields() -> None:
    assert field_paths([]) == set()
    assert field_paths(["oops", "7"]) == set()
