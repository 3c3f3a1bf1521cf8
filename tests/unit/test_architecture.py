"""The tree keeps the shape ARCHITECTURE.md states: layers, one door to Kafka, small modules."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "kaudit"
MAX_LINES = 500
MAX_BODY_LINES = 80
KAFKA_DOOR = "kaudit/cluster/client.py"


def _layers() -> dict[str, int]:
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    block = re.search(r"```layers\n(.*?)```", text, re.S)
    assert block, "ARCHITECTURE.md has no ```layers block"
    return {name: level for level, line in enumerate(block.group(1).splitlines())
            for name in line.split()}


def _modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        yield ".".join(parts), path


def _imports(module: str, path: Path) -> Iterator[tuple[str, int]]:
    """Every module ``path`` imports, lazily or not, with its line."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from ((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            yield name, node.lineno
            # `from kaudit import demo` imports the package kaudit.demo
            if name == "kaudit":
                yield from ((f"kaudit.{alias.name}", node.lineno) for alias in node.names)


def _part(module: str) -> str:
    """The layer unit of a kaudit module: its top-level package or module."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "kaudit"


def test_every_package_has_a_layer() -> None:
    layers = _layers()
    units = {_part(m) for m, _ in _modules()} - {"kaudit", "__main__"}
    assert sorted(units - set(layers)) == [], "add these to ARCHITECTURE.md's layers block"
    assert sorted(set(layers) - units) == [], "ARCHITECTURE.md names packages that are gone"


def test_imports_only_go_down_the_layers() -> None:
    layers = _layers()
    wrong = []
    for module, path in _modules():
        source = _part(module)
        if source in ("kaudit", "__main__"):
            continue
        for name, line in _imports(module, path):
            if not name.startswith("kaudit.") or _part(name) in (source, "kaudit"):
                continue
            target = _part(name)
            if layers.get(target, -1) >= layers[source]:
                wrong.append(f"{path.relative_to(ROOT)}:{line}: {source} imports {name}")
    assert wrong == []


def test_only_the_door_imports_confluent_kafka() -> None:
    importers = sorted({f"{path.relative_to(ROOT)}" for module, path in _modules()
                        for name, _ in _imports(module, path)
                        if name.split(".")[0] == "confluent_kafka"})
    assert importers == [KAFKA_DOOR]


def test_only_the_protocol_modules_import_kafka_python() -> None:
    importers = sorted({f"{path.relative_to(ROOT)}" for module, path in _modules()
                        for name, _ in _imports(module, path) if name.split(".")[0] == "kafka"})
    assert importers == ["kaudit/cluster/protocol.py", "kaudit/cluster/protocol_config.py"]


@pytest.mark.parametrize("module,path", list(_modules()), ids=lambda x: str(x))
def test_module_is_small(module: str, path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{module} has {lines} lines; split it (ARCHITECTURE.md)"


def _long_functions(source: str) -> Iterator[tuple[str, int, int]]:
    """Every function whose body, its docstring left out, runs past MAX_BODY_LINES:
    (name, line, body lines)."""
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        body = node.body
        if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            body = body[1:]
        if body:
            lines = (body[-1].end_lineno or body[-1].lineno) - body[0].lineno + 1
            if lines > MAX_BODY_LINES:
                yield node.name, node.lineno, lines


def test_no_function_body_is_longer_than_a_reader_can_hold() -> None:
    long = [f"{path.relative_to(ROOT)}:{line}: {name} has {lines} lines"
            for _, path in _modules()
            for name, line, lines in _long_functions(path.read_text(encoding="utf-8"))]
    assert long == [], f"split by what each part does (at most {MAX_BODY_LINES} lines)"


def test_the_length_rule_counts_the_body_without_its_docstring() -> None:
    body = "\n".join(f"    x = {i}" for i in range(MAX_BODY_LINES))
    fits = f'def f():\n    """Doc\n\n    more doc."""\n{body}\n'
    assert list(_long_functions(fits)) == []
    assert list(_long_functions(fits + "    return x\n")) == [("f", 1, MAX_BODY_LINES + 1)]


def test_the_checker_sees_a_wrong_import(tmp_path: Path) -> None:
    """The import reader understands relative and lazy imports (else the test above
    could pass on a tree it does not read)."""
    source = tmp_path / "x.py"
    source.write_text("def f():\n    from ..report import output\n    import kaudit.cli.app\n")
    found = [name for name, _ in _imports("kaudit.check.rules", source)]
    assert found == ["kaudit.report", "kaudit.cli.app"] or found == ["kaudit.cli.app",
                                                                     "kaudit.report"]
