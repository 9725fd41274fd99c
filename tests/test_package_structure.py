"""The package's shape (issue 57): public faces, no cycles, a small root, short functions, no columnar twins.

Each figure has a ceiling; a change that makes one worse fails here. ``python tests/test_package_structure.py``
prints the figures and every offender.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass, field
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "cdclake"
#: Tooling beside the product (benchmarks): not held to these rules.
EXEMPT = ("bench",)

#: Ceilings: lower them as the rework goes on; the issue's targets are in the comments.
MAX_PRIVATE_IMPORTS = 0
MAX_CYCLES = 0
MAX_ROOT_MODULES = 15
MAX_LONG_FUNCTIONS = 0
LONG_FUNCTION_LINES = 100
MAX_COLUMNAR_TWINS = 0


@dataclass
class Shape:
    private_imports: list[str] = field(default_factory=list)
    cycles: list[list[str]] = field(default_factory=list)
    root_modules: list[str] = field(default_factory=list)
    long_functions: list[str] = field(default_factory=list)
    twins: list[str] = field(default_factory=list)


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent)
        if rel.parts[1] in EXEMPT:
            continue
        name = ".".join(rel.with_suffix("").parts)
        found[name.removesuffix(".__init__")] = path
    return found


def _target(module: str, path: Path, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    parts = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    parts = parts[: len(parts) - (node.level - 1)]
    return ".".join(parts + ([node.module] if node.module else []))


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in list(edges):
        if v not in index:
            visit(v)
    return found


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def measure() -> Shape:
    modules = _modules()
    shape = Shape()
    edges: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                target = _target(module, path, node)
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    edges[module].add(sub if sub in modules else target)
                    # a private name, or a private module imported by name (``from pkg import _mod``)
                    if (target in modules or sub in modules) and _is_private(alias.name):
                        shape.private_imports.append(f"{module} imports {target}.{alias.name}")
            elif isinstance(node, ast.Import):
                edges[module].update(a.name for a in node.names if a.name in modules)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = node.end_lineno - node.lineno + 1
                if lines >= LONG_FUNCTION_LINES:
                    shape.long_functions.append(
                        f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {node.name} ({lines})"
                    )
        edges[module].discard(module)
        rel = path.relative_to(PACKAGE)
        if len(rel.parts) == 1 and path.name not in ("__init__.py", "__main__.py"):
            shape.root_modules.append(module)
        if path.name.endswith("_columns.py"):
            shape.twins.append(str(path.relative_to(PACKAGE.parent)))
    shape.cycles = _cycles(edges)
    for module, path in modules.items():
        shape.private_imports += _private_attributes(module, path, modules)
    return shape


def _private_attributes(module: str, path: Path, modules: dict[str, Path]) -> list[str]:
    """``alias._name`` where ``alias`` is another cdclake module imported here (the same as importing ``_name``)."""
    tree = ast.parse(path.read_text(), str(path))
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            target = _target(module, path, node)
            for alias in node.names:
                if f"{target}.{alias.name}" in modules:
                    aliases[alias.asname or alias.name] = f"{target}.{alias.name}"
        elif isinstance(node, ast.Import):
            aliases.update({a.asname: a.name for a in node.names if a.asname and a.name in modules})
    return [
        f"{module} reads {aliases[node.value.id]}.{node.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id in aliases
        and aliases[node.value.id] != module
        and node.attr.startswith("_")
        and not node.attr.startswith("__")
    ]


SHAPE = measure()


def test_no_module_imports_another_modules_private_names():
    assert len(SHAPE.private_imports) <= MAX_PRIVATE_IMPORTS, SHAPE.private_imports


def test_no_new_import_cycles():
    assert len(SHAPE.cycles) <= MAX_CYCLES, SHAPE.cycles


def test_package_root_stays_small():
    assert len(SHAPE.root_modules) <= MAX_ROOT_MODULES, SHAPE.root_modules


def test_no_new_long_functions():
    assert len(SHAPE.long_functions) <= MAX_LONG_FUNCTIONS, SHAPE.long_functions


def test_no_new_columnar_twins():
    assert len(SHAPE.twins) <= MAX_COLUMNAR_TWINS, SHAPE.twins


def test_the_check_sees_a_private_import(tmp_path):
    """The detector itself: a private name imported across modules is counted."""
    tree = ast.parse("from cdclake.merge import _hidden\n")
    node = tree.body[0]
    assert isinstance(node, ast.ImportFrom)
    assert _target("cdclake.cli", PACKAGE / "cli.py", node) == "cdclake.merge"
    assert any(a.name.startswith("_") for a in node.names)


def test_the_check_sees_a_private_name_read_through_a_module_alias(tmp_path):
    source = tmp_path / "fake.py"
    source.write_text("from cdclake.formats import kafka_connect as kc\n\nkc._hidden(kc.public)\n")
    modules = {"cdclake.formats.kafka_connect": PACKAGE / "formats" / "kafka_connect.py"}
    found = _private_attributes("cdclake.fake", source, modules)
    assert found == ["cdclake.fake reads cdclake.formats.kafka_connect._hidden"]


def _code_lines(path: Path) -> int:
    """Lines holding code: not blank, not only a comment, not in a docstring."""
    source = path.read_text()
    docs: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                docs.update(range(body[0].lineno, body[0].end_lineno + 1))
    lines = source.splitlines()
    return sum(1 for i, line in enumerate(lines, 1) if i not in docs and line.strip()[:1] not in ("", "#"))


def _print(shape: Shape) -> None:
    for name in ("private_imports", "cycles", "root_modules", "long_functions", "twins"):
        items = getattr(shape, name)
        print(f"{name}: {len(items)}")
        for item in items:
            print(f"    {item}")
    lines = sum(len(p.read_text().splitlines()) for p in _modules().values())
    print(f"product lines (cdclake/ without bench/): {lines}")
    print(f"  of which code (no blank, comment-only or docstring lines): {sum(map(_code_lines, _modules().values()))}")


if __name__ == "__main__":
    _print(SHAPE)
    sys.exit(0)
