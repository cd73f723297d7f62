"""House rules of the package: folders by layer, file sizes, no import circle, one idea per
module docstring.

The import graph is read from the source with :mod:`ast`, never by importing: an edge goes from
a module of ``adk_live_resume`` to every ``adk_live_resume`` module it imports, at module level
AND inside functions (a circle hidden in a function-level import is still a circle), AND under
``if TYPE_CHECKING:`` (a type-only import back is still a circle in the design: the two modules
cannot be read, changed or tested apart). ``from package import name`` points at the submodule
``package.name`` when there is one, else at the package. Not edges: the parent packages Python
initialises on the way to a submodule, and names imported by string (the lazy exports of
``adk_live_resume.testing``).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Collection, Mapping
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "adk_live_resume"
MAX_LINES = 800

Graph = Mapping[str, frozenset[str]]


def _modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name)."""
    found: dict[str, Path] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


MODULES = _modules()


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _known(name: str, modules: Collection[str]) -> str | None:
    """``name`` if it is one of ``modules``, else its nearest enclosing one."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(
    name: str, source: str, *, is_package: bool, modules: Collection[str] = MODULES.keys()
) -> frozenset[str]:
    """The ``modules`` (the package's) that module ``name`` imports anywhere in ``source``."""
    package = name if is_package else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):  # module level, functions, TYPE_CHECKING blocks
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            subs = [f"{module}.{alias.name}" for alias in node.names]
            targets = [sub for sub in subs if sub in modules]
            if len(targets) < len(subs):
                targets.append(module)
        else:
            continue
        found.update(t for target in targets if (t := _known(target, modules)) is not None)
    found.discard(name)
    return frozenset(found)


def import_graph() -> dict[str, frozenset[str]]:
    return {
        name: imports_of(name, path.read_text(), is_package=path.name == "__init__.py")
        for name, path in MODULES.items()
    }


def import_circles(graph: Graph) -> list[frozenset[str]]:
    """The strongly connected groups of more than one module (Tarjan), each a circle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[frozenset[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                circles.append(frozenset(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return circles


def _line_count(path: Path) -> int:
    return len(path.read_text().splitlines())


# -- the rules ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_module_is_over_800_lines(name: str) -> None:
    lines = _line_count(MODULES[name])
    assert lines <= MAX_LINES, f"{name} has {lines} lines: split it along its seams"


def test_no_import_circle() -> None:
    circles = import_circles(import_graph())
    assert circles == [], f"move the piece both modules need below both of them: {circles}"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_module_docstring_first_line_is_one_sentence(name: str) -> None:
    docstring = ast.get_docstring(ast.parse(MODULES[name].read_text()), clean=False)
    first = None if docstring is None else docstring.split("\n", 1)[0]
    assert first is not None, f"{name} has no docstring: say the one idea it holds"
    assert first.strip() == first and first, f"{name}: the docstring starts with its idea"
    assert first.endswith((".", "?")), f"{name}: the first line is one whole sentence"
    assert not re.search(r"[.?!]\s+[A-Z]", first), f"{name}: the first line has one sentence"


# -- each folder imports only the folders below it ------------------------------------------

PACKAGE_NAME = "adk_live_resume"
#: The folders of the package by layer, each with the folders its modules may import (besides
#: its own), one rule each: the docstring of each folder's ``__init__`` says the same.
FOLDER_RULES: Mapping[str, frozenset[str]] = {
    # rules import nothing from the conversation, resumption, compat, observe, the shell or launch
    "rules": frozenset(),
    # the conversation's bookkeeping asks only the rules
    "conversation": frozenset({"rules"}),
    # compat (the foreign libraries) imports no shell, resumption, observe or launch
    "compat": frozenset({"rules", "conversation"}),
    # handles and their store import no shell, compat, observe or launch
    "resumption": frozenset({"rules", "conversation"}),
    # observe imports no shell and no launch
    "observe": frozenset({"rules", "conversation", "compat", "resumption"}),
    # the shell imports every layer but the fault proxy and launch
    "shell": frozenset({"rules", "conversation", "compat", "resumption", "observe"}),
    # the fault proxy imports no shell and no launch
    "fault_proxy": frozenset({"rules", "conversation", "compat", "resumption", "observe"}),
    # launch imports every layer, and the package's own version
    "launch": frozenset(
        {
            "rules",
            "conversation",
            "compat",
            "resumption",
            "observe",
            "shell",
            "fault_proxy",
            "<top>",
        }
    ),
}
#: Modules outside the folders: the package's door (its ``__init__``, ``__main__``, the lazy
#: exports) and the test kit, which may import any folder; no folder imports the test kit.
OUTSIDE_FOLDERS = ("<top>", "testing")
#: Imports that cross a folder's rule, ``"importer -> imported"``, with the reason each stays.
KNOWN_CROSSINGS: Mapping[str, str] = {}


def folder_of(name: str) -> str:
    """The folder of module ``name``: ``"rules"`` for ``adk_live_resume.rules.next_step`` (and
    for the folder's own ``adk_live_resume.rules``), ``"<top>"`` for the package's door."""
    parts = name.split(".")
    if len(parts) == 1 or parts[1] in ("__main__", "lazy_exports"):
        return "<top>"
    return parts[1]


def crossings(graph: Graph, rules: Mapping[str, frozenset[str]]) -> list[str]:
    """``"importer -> imported"`` for each import a folder's rule does not allow."""
    found = []
    for name, targets in graph.items():
        home = folder_of(name)
        if home not in rules:
            continue
        for target in sorted(targets):
            there = folder_of(target)
            if there != home and there not in rules[home]:
                found.append(f"{name} -> {target}")
    return sorted(found)


def test_every_module_lives_in_a_folder_of_a_layer() -> None:
    homeless = sorted(n for n in MODULES if folder_of(n) not in (*FOLDER_RULES, *OUTSIDE_FOLDERS))
    assert homeless == [], f"put each in the folder of its layer (see FOLDER_RULES): {homeless}"


def test_each_folder_imports_only_what_its_rule_allows() -> None:
    found = crossings(import_graph(), FOLDER_RULES)
    new = [f for f in found if f not in KNOWN_CROSSINGS]
    assert new == [], f"move the piece down to a folder both may import: {new}"
    gone = sorted(set(KNOWN_CROSSINGS) - set(found))
    assert gone == [], f"no longer found: remove them from KNOWN_CROSSINGS: {gone}"


def test_every_folder_of_the_package_has_a_rule() -> None:
    folders = {p.parent.name for p in PACKAGE.glob("*/__init__.py")} - {"testing"}
    assert folders == set(FOLDER_RULES)


# -- the checks check ----------------------------------------------------------------------


#: A package of its own for the checks' checks: they do not depend on where the real modules
#: live.
SAMPLE_MODULES = frozenset(
    f"pkg.{name}" if name else "pkg"
    for name in [
        "", "tap", "outbox", "policy", "loop", "handles", "testing", "testing.vad",
        "testing.speech", "testing.protocol", "testing.x",
    ]
)  # fmt: skip


def test_import_graph_sees_function_level_type_checking_and_relative_imports() -> None:
    source = """
from typing import TYPE_CHECKING
from . import outbox
from .testing import vad as v
import pkg.policy
if TYPE_CHECKING:
    from .loop import LiveRun
def later():
    from .testing.speech import speech_pcm
"""
    assert imports_of("pkg.tap", source, is_package=False, modules=SAMPLE_MODULES) == {
        "pkg.outbox",
        "pkg.testing.vad",
        "pkg.policy",
        "pkg.loop",
        "pkg.testing.speech",
    }
    nested = "from ..handles import redact\nfrom .. import policy\nfrom . import protocol as p\n"
    assert imports_of("pkg.testing.x", nested, is_package=False, modules=SAMPLE_MODULES) == {
        "pkg.handles",
        "pkg.policy",
        "pkg.testing.protocol",
    }


def test_crossings_finds_an_import_up_and_lets_one_down_pass() -> None:
    graph = {
        "adk_live_resume.rules.a": frozenset({"adk_live_resume.shell.b"}),
        "adk_live_resume.shell.b": frozenset({"adk_live_resume.rules.a", "adk_live_resume"}),
        "adk_live_resume.testing.c": frozenset({"adk_live_resume.shell.b"}),
        "adk_live_resume.rules.d": frozenset({"adk_live_resume.testing.c"}),
    }
    assert crossings(graph, FOLDER_RULES) == [
        "adk_live_resume.rules.a -> adk_live_resume.shell.b",
        "adk_live_resume.rules.d -> adk_live_resume.testing.c",
        "adk_live_resume.shell.b -> adk_live_resume",
    ]


def test_import_circles_finds_a_circle_and_only_it() -> None:
    graph = {"a": frozenset({"b"}), "b": frozenset({"c"}), "c": frozenset({"a"}), "d": frozenset()}
    assert import_circles({**graph, "d": frozenset({"a"})}) == [frozenset({"a", "b", "c"})]
    assert import_circles({"a": frozenset({"b"}), "b": frozenset()}) == []


# -- no module assigns another module's object's attributes -------------------------------

#: Assignments the check still finds, ``"module:target"`` with the reason each stays.
KNOWN_FOREIGN_ASSIGNMENTS: Mapping[str, str] = {
    "adk_live_resume.observe.log_redaction:record.args": (
        "logging's LogRecord, not a module of ours (its field name collides with one of ours)"
    ),
    "adk_live_resume.shell.loop:self.request.model": (
        "ADK's LlmRequest, not a module of ours (the fake's classes have a field 'model')"
    ),
    "adk_live_resume.testing.proxy_cli:proxy.latency": (
        "FaultProxy.latency is a public attribute the fake's users set (documented in"
        " proxy.py); the command line is one such user"
    ),
}
#: Whole subpackages the check leaves out, with the reason (none now: the fake's parts write
#: its records through the records' methods).
UNCHECKED_PACKAGES: Mapping[str, str] = {}


def _is_protocol(node: ast.ClassDef) -> bool:
    return any(
        (isinstance(base, ast.Name) and base.id == "Protocol")
        or (isinstance(base, ast.Attribute) and base.attr == "Protocol")
        for base in node.bases
    )


def _assigned(tree: ast.AST) -> list[tuple[ast.Attribute, int]]:
    """Every attribute assigned in ``tree`` (``x.a = ``, ``x.a += ``, tuple targets)."""
    found: list[tuple[ast.Attribute, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        else:
            continue
        for target in targets:
            for one in target.elts if isinstance(target, ast.Tuple) else [target]:
                if isinstance(one, ast.Attribute):
                    found.append((one, node.lineno))
    return found


def _own_fields(tree: ast.AST) -> set[str]:
    """The attributes the module's classes give their instances (``self.x = ``, class-level
    annotations); a Protocol's fields are another module's object's, not its own."""
    fields: set[str] = set()
    for cls in ast.walk(tree):
        if not isinstance(cls, ast.ClassDef) or _is_protocol(cls):
            continue
        for target, _ in _assigned(cls):
            if isinstance(target.value, ast.Name) and target.value.id == "self":
                fields.add(target.attr)
        for item in cls.body:
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                fields.add(item.target.id)
    return fields


def foreign_assignments(sources: Mapping[str, str]) -> list[str]:
    """``"module:target"`` for each assignment to an attribute that only another module's
    classes define, on anything but ``self``/``cls`` (read from the source, never imported).
    """
    trees = {name: ast.parse(source) for name, source in sources.items()}
    fields = {name: _own_fields(tree) for name, tree in trees.items()}
    found: list[str] = []
    for name, tree in trees.items():
        others = set().union(*(f for other, f in fields.items() if other != name)) - fields[name]
        for target, _ in _assigned(tree):
            on_self = isinstance(target.value, ast.Name) and target.value.id in ("self", "cls")
            if not on_self and target.attr in others:
                found.append(f"{name}:{ast.unparse(target)}")
    return sorted(set(found))


def test_no_module_assigns_another_modules_objects_attributes() -> None:
    sources = {
        name: path.read_text()
        for name, path in MODULES.items()
        if not any(name == p or name.startswith(p + ".") for p in UNCHECKED_PACKAGES)
    }
    found = foreign_assignments(sources)
    new = [f for f in found if f not in KNOWN_FOREIGN_ASSIGNMENTS]
    assert new == [], f"ask the object's module for it by a method instead: {new}"
    gone = sorted(set(KNOWN_FOREIGN_ASSIGNMENTS) - set(found))
    assert gone == [], f"no longer found: remove them from KNOWN_FOREIGN_ASSIGNMENTS: {gone}"


def test_foreign_assignments_sees_another_modules_field_and_not_ones_own() -> None:
    sources = {
        "a": "class Run:\n    def __init__(self):\n        self.count = 0\n",
        "b": (
            "from typing import Protocol\n"
            "class RunLike(Protocol):\n    count: int\n"
            "class Watch:\n    def __init__(self, run):\n        self.run = run\n"
            "    def seen(self):\n        self.run.count += 1\n        self.mine = 1\n"
            "def other(watch, run):\n    watch.run = run\n    run.count, x.y = 1, 2\n"
        ),
    }
    assert foreign_assignments(sources) == ["b:run.count", "b:self.run.count"]


# -- a Protocol one module needs of another is narrow --------------------------------------

#: The most members a Protocol of the package may have: a seam carries behaviour, not a copy
#: of another object's attribute list.
MAX_PROTOCOL_MEMBERS = 8
#: Protocols allowed more, with their number and the reason.
WIDER_PROTOCOLS: Mapping[str, tuple[int, str]] = {
    "adk_live_resume.compat.tap.TapListener": (
        9,
        "the listener of what the tap sees: one behaviour per kind of event (a server message,"
        " its transcription, goAway, a handle update, tool calls, a client send, the sends due"
        " after it, a read error, the client's close); no field of another object",
    ),
}


def protocol_members(source: str) -> dict[str, int]:
    """Each Protocol class of ``source`` by name, with how many members it declares (fields,
    methods and properties; a property's setter is the same member)."""
    found: dict[str, int] = {}
    for cls in ast.walk(ast.parse(source)):
        if not isinstance(cls, ast.ClassDef) or not _is_protocol(cls):
            continue
        names: set[str] = set()
        for item in cls.body:
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                names.add(item.target.id)
            elif isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                names.add(item.name)
        found[cls.name] = len(names)
    return found


def test_no_protocol_has_more_than_8_members() -> None:
    wide = {
        f"{name}.{cls}": count
        for name, path in MODULES.items()
        for cls, count in protocol_members(path.read_text()).items()
        if count > WIDER_PROTOCOLS.get(f"{name}.{cls}", (MAX_PROTOCOL_MEMBERS, ""))[0]
    }
    assert wide == {}, f"find the seam: what behaviour does the module need of the other? {wide}"


def test_protocol_members_counts_fields_methods_and_properties_once() -> None:
    source = (
        "from typing import Protocol\n"
        "import typing\n"
        "class Run(Protocol):\n    a: int\n    b: str\n"
        "    @property\n    def c(self) -> int: ...\n"
        "    @c.setter\n    def c(self, value: int) -> None: ...\n"
        "    async def d(self) -> None: ...\n"
        "class Other(typing.Protocol):\n    def e(self) -> None: ...\n"
        "class Plain:\n    x: int\n"
    )
    assert protocol_members(source) == {"Run": 4, "Other": 1}
