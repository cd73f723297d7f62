"""The documentation stays true: short README, links that resolve, and a Troubleshooting page
that names every exception the package raises and quotes every WARNING (or worse) it logs.

The package is read with :mod:`ast`, so a new ``raise`` or ``logger.warning(...)`` anywhere in
``adk_live_resume/`` fails here until the page explains it. The site's own strict build
(``python3 scripts/dev.py docs``) checks anchors, docstrings and the API reference.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "adk_live_resume"
DOCS = ROOT / "docs"
README = ROOT / "README.md"
TROUBLESHOOTING = DOCS / "troubleshooting.md"
#: This repository on GitHub: links to its files there must name files that exist here.
REPOSITORY_URL = re.compile(
    r"^https://github\.com/adk-live-resume/adk-live-resume/(?:blob|tree)/main/(?P<path>[^#?]*)"
)
#: Logger methods whose records reach a user's log by default.
LOUD_LEVELS = frozenset({"warning", "error", "exception", "critical"})
#: A %-style placeholder (``%s``, ``%.1f``, ``%r``...), as the page shows it: ``…``.
PLACEHOLDER = re.compile(r"%[-#0 +]*\d*(?:\.\d+)?[sdrfgi]")
README_LIMIT_BYTES = 12_000

BUILTIN_EXCEPTIONS = frozenset(
    name
    for name in dir(builtins)
    if isinstance(getattr(builtins, name), type)
    and issubclass(getattr(builtins, name), BaseException)
)


def _docs_hooks() -> ModuleType:
    """``scripts/docs_hooks.py``, the site's build hooks (where the plots are served from)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        return importlib.import_module("docs_hooks")
    finally:
        sys.path.remove(str(ROOT / "scripts"))


def _package_trees() -> list[tuple[Path, ast.Module]]:
    return [(path, ast.parse(path.read_text(encoding="utf-8"))) for path in PACKAGE.rglob("*.py")]


def _literal(node: ast.expr) -> str | None:
    """A message argument as text (f-string values and concatenated parts become ``%s``)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(
            v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else "%s"
            for v in node.values
        )
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return (_literal(node.left) or "%s") + (_literal(node.right) or "%s")
    return None


def logged_messages() -> dict[str, str]:
    """Every WARNING/ERROR message the package logs, rendered as the page quotes it
    (placeholders as ``…``), with where it comes from."""
    found: dict[str, str] = {}
    for path, tree in _package_trees():
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in LOUD_LEVELS and node.args:
                argument = node.args[0]
            elif name == "_warn_once" and len(node.args) >= 2:  # patch.py: once per process
                argument = node.args[1]
            else:
                continue
            text = _literal(argument)
            if text is None:  # a message built elsewhere, e.g. _warn_once's own body
                continue
            where = f"{path.relative_to(ROOT)}:{node.lineno}"
            found[_normalized(PLACEHOLDER.sub("…", text))] = where
    return found


def raised_exception_names() -> dict[str, str]:
    """Every public exception class the package defines or raises by name, with a source."""
    classes: dict[str, list[str]] = {}
    raised: dict[str, str] = {}
    for path, tree in _package_trees():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                bases = [getattr(b, "id", getattr(b, "attr", "")) for b in node.bases]
                classes[node.name] = bases
                raised.setdefault(f"class {node.name}", f"{path.relative_to(ROOT)}:{node.lineno}")
            if isinstance(node, ast.Raise) and node.exc is not None:
                target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
                if isinstance(target, ast.Name) and target.id[:1].isupper():
                    raised.setdefault(target.id, f"{path.relative_to(ROOT)}:{node.lineno}")
    exceptions = set(BUILTIN_EXCEPTIONS)
    changed = True
    while changed:  # classes deriving (through the package's own) from an exception
        changed = False
        for name, bases in classes.items():
            if name not in exceptions and any(b in exceptions for b in bases):
                exceptions.add(name)
                changed = True
    names: dict[str, str] = {}
    for key, where in raised.items():
        name = key.removeprefix("class ")
        if name.startswith("_") or (key.startswith("class ") and name not in exceptions):
            continue
        if name in exceptions or not key.startswith("class "):
            names[name] = where
    return names


def _normalized(text: str) -> str:
    return " ".join(text.split())


def _headings(markdown: str) -> str:
    return "\n".join(line for line in markdown.splitlines() if line.startswith("#"))


def _links(markdown: str) -> list[str]:
    prose = re.sub(r"```.*?```", "", markdown, flags=re.DOTALL)
    prose = re.sub(r"`[^`\n]*`", "", prose)
    return re.findall(r"\]\(([^)\s]+)\)", prose)


def _markdown_files() -> list[Path]:
    return [README, ROOT / "BENCHMARKS.md", ROOT / "CHANGELOG.md", *sorted(DOCS.rglob("*.md"))]


def test_the_readme_is_short() -> None:
    size = len(README.read_bytes())
    assert size <= README_LIMIT_BYTES, (
        f"README.md is {size} bytes, over {README_LIMIT_BYTES}: move detail into docs/ and link it"
    )


def test_the_readme_keeps_the_commands_ci_and_users_run() -> None:
    readme = README.read_text(encoding="utf-8")
    assert "python3 scripts/dev.py test    # every test but the long soaks" in readme
    assert "python3 scripts/dev.py demo" in readme
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "python3 scripts/dev.py test" in ci and "python3 scripts/dev.py soak" in ci


@pytest.mark.parametrize("page", _markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    for link in _links(page.read_text(encoding="utf-8")):
        repository = REPOSITORY_URL.match(link)
        if repository:
            target = ROOT / repository["path"]
        elif re.match(r"^[a-z]+:", link) or link.startswith("#"):
            continue  # another site, or an anchor on the page (the strict build checks those)
        else:
            target = page.parent / link.split("#", 1)[0]
            served = target.resolve().relative_to(ROOT).parts
            if served[:2] == ("docs", "plots"):  # the hooks serve benchmarks/plots there
                target = _docs_hooks().PLOTS.joinpath(*served[2:])
        if not target.exists():
            broken.append(link)
    assert not broken, f"{page.relative_to(ROOT)} links to missing files: {broken}"


def test_the_link_check_reads_links_and_maps_repository_urls() -> None:
    links = _links(
        "see [a](docs/a.md#x) and ![p](plots/p.png), `[not](code.md)`\n```\n[nor](this.md)\n```\n"
    )
    assert links == ["docs/a.md#x", "plots/p.png"]
    match = REPOSITORY_URL.match(
        "https://github.com/adk-live-resume/adk-live-resume/blob/main/examples/x.py#L3"
    )
    assert match is not None and match["path"] == "examples/x.py"


def test_troubleshooting_has_a_section_for_every_exception() -> None:
    headings = _headings(TROUBLESHOOTING.read_text(encoding="utf-8"))
    names = raised_exception_names()
    assert {"ReconnectFailedError", "HandleKeyError", "ValueError", "LauncherError"} <= set(names)
    missing = {n: where for n, where in names.items() if f"`{n}`" not in headings}
    assert not missing, (
        "docs/troubleshooting.md needs a heading naming each of these exceptions (what it "
        f"means, what to do): {missing}"
    )


def test_troubleshooting_quotes_every_warning_the_package_logs() -> None:
    page = _normalized(TROUBLESHOOTING.read_text(encoding="utf-8"))
    messages = logged_messages()
    assert len(messages) >= 20
    missing = {m: where for m, where in messages.items() if m not in page}
    assert not missing, (
        "docs/troubleshooting.md must quote each WARNING/ERROR message (placeholders as '…') "
        f"and say what it means and what to do: {missing}"
    )


def test_the_policy_table_is_made_from_every_field() -> None:
    import dataclasses

    from adk_live_resume import ResumePolicy

    table = _docs_hooks().policy_fields_table()
    for item in dataclasses.fields(ResumePolicy):
        row = next(line for line in table.splitlines() if line.startswith(f"| `{item.name}` "))
        assert f"`ADK_LIVE_RESUME_{item.name.upper()}`" in row
        cells = [c.strip() for c in row.split(" | ")]
        assert cells[4], f"{item.name} has no docstring"
    max_attempts = next(line for line in table.splitlines() if "`max_attempts`" in line)
    assert "`8`" in max_attempts and "max_attempts must be >= 1" in max_attempts
    assert "must not contain [1007]" in table
