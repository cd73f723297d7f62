"""The package's layering: no import circle among its modules, the loop only wires."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "adk_live_resume"


def _imports(path: Path, modules: set[str]) -> set[str]:
    """Sibling modules ``path`` imports anywhere (also inside functions and TYPE_CHECKING)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level == 1:
            names = [node.module] if node.module else [alias.name for alias in node.names]
        elif node.level == 0 and (node.module or "").startswith("adk_live_resume."):
            names = [(node.module or "").removeprefix("adk_live_resume.")]
        else:
            continue
        found.update(name.split(".")[0] for name in names)
    return (found & modules) - {path.stem}


def test_no_module_of_the_package_imports_itself_back() -> None:
    modules = {path.stem for path in PACKAGE.glob("*.py")}
    graph = {path.stem: _imports(path, modules) for path in PACKAGE.glob("*.py")}

    def reachable(start: str) -> set[str]:
        seen: set[str] = set()
        todo = [start]
        while todo:
            for nxt in graph[todo.pop()] - seen:
                seen.add(nxt)
                todo.append(nxt)
        return seen

    circles = sorted(f"{a} -> {b}" for a in graph for b in graph[a] if a in reachable(b))
    assert circles == [], f"import circles (break one with a Protocol or shared module): {circles}"


def test_the_loop_only_wires() -> None:
    lines = len((PACKAGE / "loop.py").read_text(encoding="utf-8").splitlines())
    assert lines <= 450, f"loop.py has {lines} lines: move a rule into a module of its own"
