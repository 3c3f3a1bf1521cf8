"""The comparison modes: one registry of names, one plan per name, and no mode branch or
private name shared outside them. No Spark session: the plans are only imported."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import get_args

from kaudit.reconcile.modes import MODES, ModeName
from kaudit.reconcile.plan import PLANS, Mode
from tests.conftest import run_in_process

PLAN_DIR = Path(__file__).parents[3] / "kaudit" / "reconcile" / "plan"


def test_every_mode_has_one_plan_of_its_name() -> None:
    assert tuple(MODES) == get_args(ModeName)
    assert tuple(PLANS) == tuple(MODES)
    for name, plan in PLANS.items():
        assert isinstance(plan, Mode) and plan.name == name
        assert plan.group and all(c.startswith("_") for c in plan.group)


def test_only_coordinates_needs_the_sinks_coordinates() -> None:
    needs = {name: (plan.by_coordinates, plan.sink_columns) for name, plan in PLANS.items()}
    assert needs == {"append": (False, ()), "upsert": (False, ()),
                     "coordinates": (True, ("partition", "offset"))}


def test_the_cli_offers_the_registrys_modes(tmp_path: Path) -> None:
    result = run_in_process("reconcile", "-b", "127.0.0.1:1", "--topic", "orders", "--sink",
                            f"json:{tmp_path}", "--mode", "merge")
    assert result.code == 2
    assert "'merge' is not one of " + ", ".join(f"'{m}'" for m in MODES) in \
        " ".join(result.stderr.replace("│", " ").split())
    assert "; ".join(f"{name}: {what}" for name, what in MODES.items()) in \
        " ".join(run_in_process("reconcile", "--help").stdout.replace("│", " ").split())


def test_plan_modules_share_public_names_only() -> None:
    for path in sorted(PLAN_DIR.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (
                    node.level or (node.module or "").startswith("kaudit.")):
                private = [a.name for a in node.names if a.name.startswith("_")]
                assert private == [], f"{path.name} imports {private} from {node.module}"


def test_no_mode_is_compared_by_name_outside_the_registries() -> None:
    kaudit = PLAN_DIR.parents[1]
    found = [str(p.relative_to(kaudit)) for p in sorted(kaudit.rglob("*.py"))
             if re.search(r"\.mode\s*[!=]=", p.read_text())]
    assert found == []
