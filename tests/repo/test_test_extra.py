"""The fast suite runs with the ``test`` extra alone (``pip install -e ".[test]"``).

Every module a file under ``tests/`` imports (at its top or inside a test) is the standard
library's, this project's, or a distribution that installing the ``test`` extra brings (its
requirements and theirs, as the installed packages' metadata declares them); any other is
asked for with ``pytest.importorskip`` in that file, so the test that needs it skips saying
which extra to install. Read from the sources and the installed metadata: no environment is
built, so CI pays nothing for it.
"""

from __future__ import annotations

import ast
import importlib.metadata as metadata
import sys
from collections.abc import Iterator
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

TESTS = Path(__file__).resolve().parents[1]
PROJECT = "adk-live-resume"
FIRST_PARTY = frozenset({"adk_live_resume", "tests", "__future__"})


def _brought_by(project: str, extra: str) -> set[str]:
    """The canonical names of the distributions that installing ``project[extra]`` brings,
    ``project`` included, from the installed packages' declared requirements."""
    environment: dict[str, str] = dict(default_environment())
    seen: dict[str, set[str]] = {}
    todo: list[tuple[str, frozenset[str]]] = [(project, frozenset({extra}))]
    while todo:
        name, extras = todo.pop()
        key = canonicalize_name(name)
        known = seen.get(key)
        if known is not None and extras <= known:
            continue
        seen[key] = (known or set()) | extras
        try:
            requirements = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue  # (brought all the same; what it needs is not known here)
        for line in requirements:
            requirement = Requirement(line)
            marker = requirement.marker
            if marker is not None and not any(
                marker.evaluate({**environment, "extra": wanted}) for wanted in {"", *extras}
            ):
                continue
            todo.append((requirement.name, frozenset(requirement.extras)))
    return set(seen)


def _imports(path: Path) -> Iterator[tuple[str, int]]:
    """``(top-level module, line)`` for every absolute import in the file at ``path``."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name.partition(".")[0], node.lineno
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module.partition(".")[0], node.lineno


def _skipped_without(path: Path) -> set[str]:
    """The top-level modules the file at ``path`` asks for with ``pytest.importorskip``."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "importorskip"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            names.add(node.args[0].value.partition(".")[0])
    return names


def test_every_module_the_tests_import_comes_with_the_test_extra_or_skips() -> None:
    brought = _brought_by(PROJECT, "test")
    assert canonicalize_name("pytest-xdist") in brought and "google-adk" in brought
    owners = metadata.packages_distributions()
    missing = []
    for path in sorted(TESTS.rglob("*.py")):
        skipped = _skipped_without(path)
        for module, line in _imports(path):
            if module in FIRST_PARTY or module in sys.stdlib_module_names or module in skipped:
                continue
            providers = {canonicalize_name(d) for d in owners.get(module, [])}
            if not providers & brought:
                where = f"{path.relative_to(TESTS.parent)}:{line}"
                missing.append(f"{where}: {module} (from {sorted(providers) or 'nowhere'})")
    assert not missing, (
        "imported by the tests but not brought by the test extra; add the package to the"
        " `test` extra in pyproject.toml, or guard the test with pytest.importorskip(...,"
        " reason='needs the ... extra'):\n" + "\n".join(missing)
    )


def test_the_closure_of_an_extra_follows_the_requirements_it_names() -> None:
    """A self-referencing extra (``test`` names ``adk-live-resume[testing]``) brings that
    extra's requirements; a requirement for another extra only does not."""
    brought = _brought_by(PROJECT, "test")
    assert {"cryptography", "pytest-asyncio", "hypothesis"} <= brought
    assert not {"mkdocs", "matplotlib", "playwright", "ruff"} & brought
