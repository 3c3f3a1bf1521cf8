"""JSON schema inference on the driver: Spark's rules, checked against Spark itself."""

from __future__ import annotations

import json

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.types import StructType

from kaudit.reconcile.infer import infer_ddl


def test_flat_record() -> None:
    ddl = infer_ddl(['{"id": 1, "name": "a", "amount": 2.5, "ok": true}'])
    assert ddl == "`amount` double, `id` bigint, `name` string, `ok` boolean"


def test_fields_merge_across_samples() -> None:
    ddl = infer_ddl(['{"id": 1, "a": null}', '{"id": 2.5, "b": "x"}', '{"a": 3}'])
    assert ddl == "`a` bigint, `b` string, `id` double"


def test_conflicting_types_become_string() -> None:
    assert infer_ddl(['{"v": 1}', '{"v": "one"}']) == "`v` string"
    assert infer_ddl(['{"v": {"x": 1}}', '{"v": 2}']) == "`v` string"
    assert infer_ddl(['{"v": [1]}', '{"v": true}']) == "`v` string"


def test_only_null_and_empty_arrays_are_strings() -> None:
    assert infer_ddl(['{"n": null, "e": []}']) == "`e` array<string>, `n` string"


def test_nested_structs_and_arrays() -> None:
    ddl = infer_ddl(['{"o": {"b": 1, "a": [1, 2.5]}, "l": [{"x": 1}, {"y": "s"}]}'])
    assert ddl == ("`l` array<struct<`x`:bigint, `y`:string>>, "
                   "`o` struct<`a`:array<double>, `b`:bigint>")


def test_big_integers() -> None:
    assert infer_ddl([json.dumps({"v": 2**63})]) == "`v` decimal(38,0)"
    assert infer_ddl([json.dumps({"v": 2**63}), '{"v": 1}']) == "`v` decimal(38,0)"
    assert infer_ddl([json.dumps({"v": 10**40})]) == "`v` double"


def test_non_objects_and_broken_text_are_skipped() -> None:
    assert infer_ddl(["5", "[1, 2]", "not json", b"\xff\xfe", '{"a": 1}']) == "`a` bigint"
    assert infer_ddl(["5", "oops"]) == ""
    assert infer_ddl([]) == ""


def test_odd_field_names_are_quoted() -> None:
    ddl = infer_ddl(['{"we`ird name": 1, "x.y": 2}'])
    assert ddl == "`we``ird name` bigint, `x.y` bigint"


SAMPLES = [
    ['{"id": 1, "status": "paid", "amount": 8.07}', '{"id": 2, "status": null, "amount": 3}'],
    ['{"a": {"b": [1, 2], "c": null}, "d": true}', '{"a": {"b": [], "e": 1.5}}'],
    ['{"x": 1}', '{"x": "s"}', '{"y": [[1], [2.5]]}'],
    ['{"we`ird name": 1, "x.y": {"z": false}}'],
]


@pytest.mark.spark
@pytest.mark.parametrize("sample", SAMPLES)
def test_matches_sparks_own_inference(spark: SparkSession, sample: list[str]) -> None:
    theirs = spark.read.json(spark.sparkContext.parallelize(sample)).schema
    ours = StructType.fromDDL(infer_ddl(sample))
    assert ours.simpleString() == theirs.simpleString()
