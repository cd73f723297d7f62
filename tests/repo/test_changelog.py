"""The changelog's Unreleased section stays a page a user reads, and names only what exists.

Each entry says what a user upgrading sees or must do; how it works goes into the commit body or
docs/development.md. So the section has a length limit and each entry a word limit, and every
name in backticks that looks like a public ``adk_live_resume`` attribute must resolve: a name
exported by ``adk_live_resume`` or ``adk_live_resume.testing`` (``RunStats.usage``,
``Fault.stall(shape, session=False)``: the attribute chain and the call's parameter names), or
a dotted ``adk_live_resume.…`` name, which must be importable or a name the package uses as
text (a metric, span attribute or logger name).
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import re
import typing
from pathlib import Path
from typing import Any

import pytest

import adk_live_resume
import adk_live_resume.testing

ROOT = Path(__file__).resolve().parents[2]
CHANGELOG = ROOT / "CHANGELOG.md"
PACKAGE = ROOT / "adk_live_resume"
#: The most lines the Unreleased section may take: a page a user reads in a few minutes.
MAX_LINES = 300
#: The most words one entry may take.
MAX_WORDS = 80
PREFIX = "adk_live_resume"
EXPORTS: dict[str, Any] = {
    **{name: adk_live_resume for name in adk_live_resume.__all__},
    **{name: adk_live_resume.testing for name in adk_live_resume.testing.__all__},
}


def unreleased(text: str) -> str:
    """The Unreleased section of a changelog, its heading excluded."""
    start = text.index("## [Unreleased]")
    end = text.index("\n## [", start + 1)
    return text[start:end].split("\n", 1)[1]


def entries(section: str) -> list[str]:
    """The section's entries, each a list item with its continuation lines joined."""
    found: list[str] = []
    for line in section.splitlines():
        if line.startswith("- "):
            found.append(line[2:])
        elif line.startswith("  ") and found:
            found[-1] += " " + line.strip()
    return found


def code_spans(section: str) -> list[str]:
    """The text of every code span (a span may go on over a line break, as in Markdown)."""
    return [" ".join(span.split()) for span in re.findall(r"`([^`]+)`", section)]


def _used_names() -> list[re.Pattern[str]]:
    """The dotted ``adk_live_resume.…`` names the package writes as text (metric, span
    attribute, logger names), an f-string's fields matching any word."""
    patterns = set()
    for path in PACKAGE.rglob("*.py"):
        for literal in re.findall(r"""["'](adk_live_resume\.[\w.{}]+)["']""", path.read_text()):
            patterns.add(re.sub(r"\\\{\w*\\\}", r"\\w+", re.escape(literal)))
    return [re.compile(pattern) for pattern in sorted(patterns)]


def _has(owner: Any, name: str) -> bool:
    """Whether ``owner`` has the attribute ``name``: a class attribute, a dataclass field, an
    annotation, or an attribute one of the package's ``__init__`` methods sets on ``self``."""
    if hasattr(owner, name):
        return True
    if not inspect.isclass(owner):
        return False
    if dataclasses.is_dataclass(owner) and name in {f.name for f in dataclasses.fields(owner)}:
        return True
    if name in typing.get_type_hints(owner):
        return True
    sets = re.compile(rf"\bself\.{re.escape(name)}\s*[:=]")
    return any(sets.search(_init_source(cls)) for cls in owner.__mro__)


def _init_source(cls: type) -> str:
    """The source of the ``__init__`` the package's class ``cls`` defines ("" for none, or
    for one a dataclass generated)."""
    if not cls.__module__.startswith(PREFIX) or "__init__" not in vars(cls):
        return ""
    try:
        return inspect.getsource(vars(cls)["__init__"])
    except (OSError, TypeError):
        return ""


def _resolve(parts: list[str]) -> tuple[Any, str]:
    """The object ``parts`` name (an exported name or ``adk_live_resume`` first), or a problem."""
    if parts[0] == PREFIX:
        owner: Any = adk_live_resume
        for i, part in enumerate(parts[1:], start=1):
            if not _has(owner, part):
                try:
                    owner = importlib.import_module(".".join(parts[: i + 1]))
                    continue
                except ImportError:
                    return None, f"{'.'.join(parts[: i + 1])} does not exist"
            owner = getattr(owner, part, None)
        return owner, ""
    owner = getattr(EXPORTS[parts[0]], parts[0])
    for i, part in enumerate(parts[1:], start=1):
        if not _has(owner, part):
            return None, f"{'.'.join(parts[: i + 1])} does not exist"
        owner = getattr(owner, part, None)
    return owner, ""


def _call_problem(target: Any, call: ast.Call, name: str) -> str:
    """Whether the keywords and the plain names passed in ``call`` are parameters of
    ``target``."""
    try:
        parameters = inspect.signature(target).parameters
    except (TypeError, ValueError):
        return ""
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return ""
    given = [k.arg for k in call.keywords if k.arg is not None]
    given += [a.id for a in call.args if isinstance(a, ast.Name)]
    unknown = [g for g in given if g not in parameters]
    return f"{name}() takes no parameter {', '.join(unknown)}" if unknown else ""


def _dotted(node: ast.expr) -> list[str] | None:
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return None if inner is None else [*inner, node.attr]
    return None


def name_problem(span: str, used: list[re.Pattern[str]]) -> str:
    """What is wrong with the public name ``span`` names ("" when it exists or is no such
    name)."""
    try:
        node = ast.parse(span, mode="eval").body
    except SyntaxError:
        return ""
    call = node if isinstance(node, ast.Call) else None
    parts = _dotted(call.func if call else node)
    if not parts or (parts[0] != PREFIX and parts[0] not in EXPORTS):
        return ""
    dotted = ".".join(parts)
    target, problem = _resolve(parts)
    if problem:
        if call is None and parts[0] == PREFIX and any(p.fullmatch(dotted) for p in used):
            return ""  # a metric, span attribute or logger name the package uses
        return problem
    return _call_problem(target, call, dotted) if call is not None else ""


def problems_of(section: str) -> list[str]:
    used = _used_names()
    return [f"`{span}`: {p}" for span in code_spans(section) if (p := name_problem(span, used))]


SECTION = unreleased(CHANGELOG.read_text(encoding="utf-8"))


def test_the_unreleased_section_is_a_page() -> None:
    lines = len(SECTION.strip().splitlines())
    assert lines <= MAX_LINES, (
        f"CHANGELOG.md's Unreleased section is {lines} lines, over {MAX_LINES}: say what a user "
        "sees or must do; how it works goes into the commit body or docs/development.md"
    )


def test_every_entry_is_short() -> None:
    long = {e[:60]: n for e in entries(SECTION) if (n := len(e.split())) > MAX_WORDS}
    assert not long, f"entries over {MAX_WORDS} words (split or cut them): {long}"


def test_every_public_name_it_mentions_exists() -> None:
    assert len(code_spans(SECTION)) > 100  # the section was found and read
    problems = problems_of(SECTION)
    assert not problems, "CHANGELOG.md names what does not exist: " + "; ".join(problems)


@pytest.mark.parametrize(
    "span",
    [
        "RunStats.stallz",
        "ResumePolicy(stall_timout=3)",
        "Fault.stall(shap, session=False)",
        "adk_live_resume.no_such_module",
        "adk_live_resume.tokens.nonsense.x",
        "FakeLiveServer.no_such_method()",
    ],
)
def test_a_name_that_does_not_exist_is_found(span: str) -> None:
    assert name_problem(span, _used_names())


@pytest.mark.parametrize(
    "span",
    [
        "RunStats.usage",
        "ResumePolicy.stall_timeout",
        "ResumePolicy(fresh_start_when_context_lost=True)",
        "Fault.stall(shape, session=False)",
        "adk_live_resume.testing.children",
        "adk_live_resume.tokens.prompt",
        "adk_live_resume.timeline",
        "ConnectionRecord.sent_times",
        'reason="stall"',
        "--inject goaway-close-code=1011",
    ],
)
def test_a_name_that_exists_or_is_no_name_passes(span: str) -> None:
    assert name_problem(span, _used_names()) == ""


def test_entries_join_their_lines() -> None:
    section = "- one\n  two `a\n  b`\n- three\n"
    assert entries(section) == ["one two `a b`", "three"]
    assert code_spans(section) == ["a b"]
