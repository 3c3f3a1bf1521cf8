"""The value formats' registry: one object per --value-format, read by the CLI, the docs and
every reconcile module that once compared the format's name."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import kaudit
from kaudit.errors import InputError
from kaudit.reconcile.formats import VALUE_FORMATS, mode_for, value_format, value_format_help
from kaudit.reconcile.formats.base import ValueFormat

KAUDIT = Path(kaudit.__file__).parent


def test_each_format_is_registered_once_under_its_own_name() -> None:
    assert list(VALUE_FORMATS) == ["json", "string", "bytes", "avro", "avro-plain"]
    for name, fmt in VALUE_FORMATS.items():
        assert isinstance(fmt, ValueFormat) and fmt.name == name
        assert value_format(name) is fmt


def test_an_unknown_name_is_exit_2_naming_the_formats() -> None:
    with pytest.raises(InputError, match="--value-format xml: not one of json, string, bytes"):
        value_format("xml")


def test_the_cli_offers_the_registry_and_its_notes() -> None:
    import typer.main

    from kaudit.cli.app import app

    command = typer.main.get_command(app)
    reconcile = command.commands["reconcile"]  # type: ignore[attr-defined]
    [option] = [p for p in reconcile.params if p.name == "value_format"]
    assert [str(c) for c in option.type.choices] == list(VALUE_FORMATS)
    assert option.help == value_format_help() == (
        "How values are decoded (bytes are compared by hash; avro: Confluent's wire format; "
        "avro-plain: a bare Avro body).")


def test_an_envelope_a_format_cannot_carry_is_refused_by_the_format() -> None:
    assert mode_for("debezium", None, "avro-plain") == "upsert"
    with pytest.raises(InputError, match="reads change events in JSON or Avro, not "
                                         "--value-format bytes"):
        mode_for("debezium", None, "bytes")
    with pytest.raises(InputError, match="needs --value-format json, not avro-plain"):
        mode_for("connect", None, "avro-plain")


def test_schema_options_are_checked_by_the_format(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="--value-format avro needs the writer schemas"):
        value_format("avro").value_schemas(None, None, "id INT", None)
    with pytest.raises(InputError, match="--reader-schema is for Avro values"):
        value_format("json").value_schemas(None, tmp_path / "r.avsc", None, None)
    with pytest.raises(InputError, match="--value-schema is for Avro values"):
        value_format("string").value_schemas(tmp_path / "w.avsc", None, None, None)
    assert value_format("bytes").value_schemas(None, None, None, None) is None


def test_the_registry_imports_without_spark() -> None:
    code = "import sys, kaudit.reconcile.formats; print('pyspark' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60, cwd=KAUDIT.parent)
    assert result.stdout.strip() == "False", result.stderr


def test_no_module_branches_on_the_value_formats_name() -> None:
    branch = re.compile(r"value_format\s*(==|!=|\bin\b|\bnot in\b)|value_format\)?\s*\.value\s*==")
    found = [f"{path.relative_to(KAUDIT)}:{n}" for path in sorted(KAUDIT.rglob("*.py"))
             for n, line in enumerate(path.read_text().splitlines(), 1) if branch.search(line)]
    assert found == []
