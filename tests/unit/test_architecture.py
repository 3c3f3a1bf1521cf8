"""The tree keeps the shape ARCHITECTURE.md states: layers, one door to Kafka, small modules."""

from __future__ import annotations

import ast
import re
from collections.abc import Collection, Iterator
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


def _modules(package: Path = PACKAGE) -> Iterator[tuple[str, Path]]:
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
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


def _imported_modules(module: str, path: Path, modules: Collection[str]) -> set[str]:
    """The modules of ``modules`` that ``path`` imports, type-only and lazy imports too:
    ``from a import b`` is ``a.b`` when that is a module, else ``a``."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            name = node.module or ""
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            found |= {f"{name}.{alias.name}" if f"{name}.{alias.name}" in modules else name
                      for alias in node.names}
    return (found & set(modules)) - {module}


def _circles(package: Path) -> list[list[str]]:
    """Every set of modules that import each other, directly or round a longer loop (the
    strongly connected components of the import graph with more than one module)."""
    modules = dict(_modules(package))
    graph = {m: sorted(_imported_modules(m, path, modules)) for m, path in modules.items()}
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(module: str) -> None:  # Tarjan's algorithm
        order[module] = low[module] = len(order)
        stack.append(module)
        for target in graph[module]:
            if target not in order:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], order[target])
        if low[module] == order[module]:
            component = [stack.pop()]
            while component[-1] != module:
                component.append(stack.pop())
            if len(component) > 1:
                circles.append(sorted(component))

    for module in graph:
        if module not in order:
            visit(module)
    return sorted(circles)


def _table_names(architecture: str) -> set[str]:
    """What the first column of ARCHITECTURE.md's package table names: ``probe/``,
    ``probe/faults/``, ``errors``..."""
    table = architecture.split("| package | what it owns |", 1)[1].split("\n\n", 1)[0]
    return {name for row in table.splitlines()[2:]
            for name in re.findall(r"`([^`]+)`", row.split("|")[1])}


def _unlisted(package: Path, architecture: str) -> tuple[list[str], list[str]]:
    """(package directories without a row in the table, rows naming nothing in the tree)."""
    directories = {f"{d.parent.relative_to(package).as_posix()}/"
                   for d in package.rglob("__init__.py") if d.parent != package}
    names = _table_names(architecture)
    gone = [n for n in names if not (n in directories if n.endswith("/")
                                     else (package / f"{n}.py").is_file())]
    return sorted(directories - names), sorted(gone)


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


def test_no_modules_import_each_other() -> None:
    """Not even type-only or lazily: two modules that need each other are one module in two
    files, or share a third thing that wants a name of its own."""
    assert _circles(PACKAGE) == []


def test_every_package_directory_has_a_row_in_the_table() -> None:
    missing, gone = _unlisted(PACKAGE, (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8"))
    assert missing == [], "say what these own in ARCHITECTURE.md's package table"
    assert gone == [], "ARCHITECTURE.md's package table names what is not in the tree"


def test_only_the_door_imports_confluent_kafka() -> None:
    importers = sorted({f"{path.relative_to(ROOT)}" for module, path in _modules()
                        for name, _ in _imports(module, path)
                        if name.split(".")[0] == "confluent_kafka"})
    assert importers == [KAFKA_DOOR]


def test_only_the_protocol_modules_import_kafka_python() -> None:
    importers = sorted({f"{path.relative_to(ROOT)}" for module, path in _modules()
                        for name, _ in _imports(module, path) if name.split(".")[0] == "kafka"})
    assert importers == ["kaudit/cluster/protocol.py", "kaudit/cluster/protocol_config.py",
                         "kaudit/cluster/protocol_quorum.py", "kaudit/cluster/protocol_share.py"]


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


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root / "kaudit"


def test_the_checker_sees_a_circle_through_type_only_and_lazy_imports(tmp_path: Path) -> None:
    package = _tree(tmp_path, {
        "kaudit/__init__.py": "",
        "kaudit/canary/__init__.py": "",
        "kaudit/canary/service.py": "from kaudit.canary import result\n",
        "kaudit/canary/result.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                   "    from .watcher import Watcher\n",
        "kaudit/canary/watcher.py": "def f():\n    from kaudit.canary.service import Canary\n",
        "kaudit/canary/state.py": "",
        "kaudit/report.py": "from kaudit.canary import state\n"})
    assert _circles(package) == [["kaudit.canary.result", "kaudit.canary.service",
                                  "kaudit.canary.watcher"]]
    (package / "canary" / "watcher.py").write_text("from kaudit.canary.state import x\n")
    assert _circles(package) == []


def test_the_checker_sees_a_package_without_a_row(tmp_path: Path) -> None:
    package = _tree(tmp_path, {"kaudit/__init__.py": "", "kaudit/errors.py": "",
                               "kaudit/probe/__init__.py": "",
                               "kaudit/probe/faults/__init__.py": ""})
    table = ("| package | what it owns |\n| --- | --- |\n| `errors` | errors |\n"
             "| `probe/` | probes |\n| `gone/` | nothing now |\n\nAfter the table.\n")
    assert _unlisted(package, table) == (["probe/faults/"], ["gone/"])
    table = table.replace("| `gone/` | nothing now |", "| `probe/faults/` | faults |")
    assert _unlisted(package, table) == ([], [])
