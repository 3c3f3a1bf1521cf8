"""``--schema``'s grammar: Spark DDL with an encoding word after a type, checked in Python
so that a bad declaration is exit 2 before Spark starts."""

from __future__ import annotations

import pytest

from kaudit.errors import InputError
from kaudit.reconcile.declared import Encoding, parse_declaration
from kaudit.reconcile.request import ReconcileRequest


def test_encoding_words_are_taken_off_the_ddl_spark_reads() -> None:
    d = parse_declaration("id BIGINT, created_at TIMESTAMP micros, day DATE DAYS, "
                          "amount DECIMAL(12, 2) BASE64, t timestamp_ntz MILLIS, "
                          "s TIMESTAMP SECONDS, note STRING")
    assert d.ddl == ("id BIGINT, created_at TIMESTAMP, day DATE, amount DECIMAL(12, 2), "
                     "t timestamp_ntz, s TIMESTAMP, note STRING")
    assert d.encodings == {"created_at": Encoding.MICROS, "day": Encoding.DAYS,
                           "amount": Encoding.BASE64, "t": Encoding.MILLIS,
                           "s": Encoding.SECONDS}


def test_time_uuid_and_json_are_read_as_text_and_named_as_kinds() -> None:
    d = parse_declaration("id BIGINT, opens TIME MICROS, closes time, ref UUID, attrs Json, "
                          "t TIME nanos")
    assert d.ddl == "id BIGINT, opens STRING, closes STRING, ref STRING, attrs STRING, t STRING"
    assert d.kinds == {"opens": "time", "closes": "time", "ref": "uuid", "attrs": "json",
                       "t": "time"}
    assert d.encodings == {"opens": Encoding.MICROS, "t": Encoding.NANOS}


def test_the_request_names_declared_kinds_by_sink_column_and_the_declaration_wins() -> None:
    request = ReconcileRequest(topic="t", sink_uri="json:/dev/null", key="id",
                               compare=("ref", "o.attrs", "at"),
                               schema="id BIGINT, ref UUID, o STRUCT<attrs: STRING>, at STRING",
                               value_types="`ref` STRING, `at` TIME MICROS, `x` JSON",
                               column_map={"ref": "ref_id"})
    # --schema names ref and at: the values' own schema says nothing of them; x is kept.
    assert request.declared_kinds() == {"ref_id": "uuid", "x": "json"}
    bare = ReconcileRequest(topic="t", sink_uri="json:/dev/null", key="id",
                            value_types="`at` TIME MICROS, `o.attrs` JSON")
    assert bare.declared_kinds() == {"at": "time", "o_attrs": "json"}


def test_a_number_of_any_width_is_read_as_text_debeziums_variable_scale_too() -> None:
    d = parse_declaration("n NUMBER, v NUMBER VARIABLE")
    assert d.ddl == "n STRING, v STRING" and d.kinds == {"n": "number", "v": "number"}
    assert d.encodings == {"v": Encoding.VARIABLE}
    with pytest.raises(InputError, match="v: VARIABLE applies to NUMBER, not DECIMAL"):
        parse_declaration("v DECIMAL(12,2) VARIABLE")


def test_nanoseconds_since_the_epoch_are_read_as_the_count_itself() -> None:
    d = parse_declaration("id BIGINT, at TIMESTAMP NANOS, local TIMESTAMP_NTZ nanos")
    assert d.ddl == "id BIGINT, at BIGINT, local BIGINT"
    assert d.kinds == {"at": "timestamp_ns", "local": "timestamp_ns"}
    assert d.encodings == {"at": Encoding.NANOS, "local": Encoding.NANOS}


def test_nested_types_and_quoted_names_keep_their_commas() -> None:
    d = parse_declaration("customer STRUCT<id: BIGINT, name: STRING>, `odd, name` MAP<STRING,"
                          " INT>, xs ARRAY<DECIMAL(5,1)>")
    assert d.ddl == ("customer STRUCT<id: BIGINT, name: STRING>, `odd, name` MAP<STRING, INT>, "
                     "xs ARRAY<DECIMAL(5,1)>")
    assert d.encodings == {}


@pytest.mark.parametrize(("text", "message"), [
    ("", "give 'name TYPE, ...'"),
    ("id", "item 1 'id' is not 'name TYPE'"),
    ("id BIGINT,,", "item 2 is empty (a comma too many?)"),
    ("id BIGINT, amount DECMAL(12,2)", "amount: unknown type 'DECMAL(12,2)'"),
    ("amount DOUBLE BASE64", "amount: BASE64 applies to DEC or DECIMAL or NUMERIC, not DOUBLE"),
    ("day DATE MICROS",
     "day: MICROS applies to TIME or TIMESTAMP or TIMESTAMP_LTZ or TIMESTAMP_NTZ, not DATE"),
    ("d DATE NANOS", "d: NANOS applies to TIME or TIMESTAMP or TIMESTAMP_LTZ or "
                     "TIMESTAMP_NTZ, not DATE"),
    ("t TIME SECONDS", "t: SECONDS applies to TIMESTAMP or TIMESTAMP_LTZ or TIMESTAMP_NTZ, "
                       "not TIME"),
    ("t TIME(3)", "t: TIME takes no parameters"),
    ("u UUID BASE64", "u: BASE64 applies to DEC or DECIMAL or NUMERIC, not UUID"),
    ("n BIGINT DAYS", "n: DAYS applies to DATE, not BIGINT"),
    ("id BIGINT, id STRING", "id is declared twice"),
])
def test_a_bad_declaration_is_one_line(text: str, message: str) -> None:
    with pytest.raises(InputError) as info:
        parse_declaration(text)
    line = str(info.value)
    assert line.startswith("--schema: ") and message in line and "\n" not in line


def test_the_request_checks_it_before_anything_is_read() -> None:
    request = ReconcileRequest(topic="t", sink_uri="json:/dev/null", key="id",
                               compare=("amount",), schema="id BIGINT, amount NUMBR")
    with pytest.raises(InputError, match="amount: unknown type 'NUMBR'"):
        request.check()
