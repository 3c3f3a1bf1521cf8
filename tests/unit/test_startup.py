"""`kaudit --help` and a TAB answer fast: no Kafka client, Spark, table, plot or validation
library. (How fast: `bench/startup`; a timed assertion would fail on a busy machine.)"""

from __future__ import annotations

import json
import os
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


def test_completion_loads_no_heavy_module() -> None:
    # What bash's completion function runs on `kaudit probe --fault <TAB>`.
    env = os.environ | {"_KAUDIT_COMPLETE": "complete_bash", "COMP_WORDS": "kaudit probe --fault ",
                        "COMP_CWORD": "3"}
    result = subprocess.run([sys.executable, "-c", _PROBE.format(heavy=HEAVY)], env=env,
                            capture_output=True, text=True, timeout=60)
    assert "kill-leader" in result.stdout.split()
    assert json.loads(result.stderr.strip().splitlines()[-1]) == []
