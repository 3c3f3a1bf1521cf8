"""`kaudit --help` answers fast: no Kafka client, Spark, table, plot or validation library."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

# pydantic: typer 0.29 imports it to coerce the root options (70 ms); pyproject keeps typer < 0.29.
HEAVY = ("confluent_kafka", "pyspark", "tabulate", "matplotlib", "yaml", "pydantic")

_PROBE = """
import json, sys
from kaudit.cli.app import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
heavy = {heavy!r}
print(json.dumps(sorted({{m.split(".")[0] for m in sys.modules}} & set(heavy))), file=sys.stderr)
"""


@pytest.mark.parametrize("args", [["--help"], ["check", "--help"], ["probe", "--help"],
                                  ["reconcile", "--help"], ["lab", "--help"]], ids=" ".join)
def test_help_loads_no_heavy_module(args: list[str]) -> None:
    result = subprocess.run([sys.executable, "-c", _PROBE.format(heavy=HEAVY), *args],
                            capture_output=True, text=True, timeout=60)
    assert "Usage: kaudit" in result.stdout
    assert json.loads(result.stderr.strip().splitlines()[-1]) == []
