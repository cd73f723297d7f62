"""The site renders docstrings' Sphinx roles: links where it documents the target, code elsewhere.

The rewriting (``scripts/docs_sphinx_roles.py``, a griffe extension) is tested as a pure
function; then the real site is built (``mkdocs build --strict``, as ``scripts/dev.py docs``)
into a temporary directory and no built page may show a role raw.
"""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import given
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]


def _script(name: str) -> ModuleType:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(ROOT / "scripts"))


# The docs extra (mkdocs, mkdocstrings, griffe) is not in every environment that runs the
# tests (the release matrix installs the test extra only): there is nothing to render then.
pytest.importorskip("griffe", reason="the docs extra is not installed (pip install .[docs])")
roles = _script("docs_sphinx_roles")

KNOWN = {
    "install": "adk_live_resume.launch.patch.install",
    "ResumePolicy": "adk_live_resume.rules.policy.ResumePolicy",
    ".hooks": "adk_live_resume.compat.hooks",
}


def _known(target: str) -> str | None:
    return KNOWN.get(target)


def _ref(identifier: str, shown: str) -> str:
    return f'<autoref identifier="{identifier}" optional>`{shown}`</autoref>'


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (":func:`install`", _ref("adk_live_resume.launch.patch.install", "install()")),
        (
            ":class:`ResumePolicy`",
            _ref("adk_live_resume.rules.policy.ResumePolicy", "ResumePolicy"),
        ),
        (":class:`~a.b.Thing`", _ref("a.b.Thing", "Thing")),
        (":meth:`~a.B.go`", _ref("a.B.go", "go()")),
        (":mod:`.hooks`", _ref("adk_live_resume.compat.hooks", "hooks")),
        (":mod:`.elsewhere`", _ref("elsewhere", "elsewhere")),
        (":meth:`B.go <a.B.go>`", _ref("a.B.go", "B.go")),
        (":py:class:`TypeError`", _ref("TypeError", "TypeError")),
        (":data:`MAX`", _ref("MAX", "MAX")),
        ("no role: `code`, :not a role:", "no role: `code`, :not a role:"),
        ("``:class:`X` in code``", "``:class:`X` in code``"),
        ("```\n:class:`X`\n```", "```\n:class:`X`\n```"),
    ],
)
def test_a_role_becomes_an_optional_cross_reference(text: str, expected: str) -> None:
    assert roles.rewrite(text, _known) == expected


def test_roles_in_running_text_and_across_lines() -> None:
    text = "Raises :class:`TypeError` when\n:func:`install` was not called."
    assert roles.rewrite(text, _known) == (
        f"Raises {_ref('TypeError', 'TypeError')} when\n"
        f"{_ref('adk_live_resume.launch.patch.install', 'install()')} was not called."
    )


_names = st.from_regex(
    r"[A-Za-z_][A-Za-z0-9_]{0,6}(\.[A-Za-z_][A-Za-z0-9_]{0,6}){0,2}", fullmatch=True
)
_role_texts = st.builds(
    lambda role, prefix, name: f":{role}:`{prefix}{name}`",
    st.sampled_from(roles.ROLES),
    st.sampled_from(["", "~", "."]),
    _names,
)
_plain = st.sampled_from(["a word", " ", "\n", "`code`", ": colon", "x:y:z"])


@given(st.lists(_role_texts | _plain, max_size=12))
def test_no_role_is_left_outside_code(pieces: list[str]) -> None:
    text = " ".join(pieces)  # apart: "`a``b`" would open a double-backtick code span
    out = roles.rewrite(text, _known)
    assert not re.search(roles._ROLE + "`", out), out
    assert out.count("<autoref ") == sum(p.startswith(":") and "`" in p for p in pieces)
    assert roles.rewrite(out, _known) == out  # rewriting twice changes nothing more


def test_roles_left_finds_a_raw_role_on_a_page(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "page.html").write_text("<p>see :class:<code>Foo</code> here</p>")
    (tmp_path / "ok.html").write_text(
        "<p><code>:class:</code> is a role's name; <code>:func:`f`</code> shows one</p>"
    )
    assert roles.roles_left(tmp_path) == ["sub/page.html: :class:<code>Foo</code>"]


@pytest.fixture(scope="module")
def built_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The documentation site, built strict as ``scripts/dev.py docs`` builds it."""
    pytest.importorskip("mkdocstrings_handlers.python", reason="needs the docs extra")
    site = tmp_path_factory.mktemp("site")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=100,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return site


def _pages(site: Path) -> Callable[[str], str]:
    return lambda page: (site / page / "index.html").read_text(encoding="utf-8")


@pytest.mark.timeout(110)
def test_no_built_page_shows_a_sphinx_role(built_site: Path) -> None:
    assert roles.roles_left(built_site) == []
    assert len(list(built_site.rglob("*.html"))) > 10


@pytest.mark.timeout(110)
def test_roles_the_site_documents_are_links_and_others_code(built_site: Path) -> None:
    api = _pages(built_site)("reference/api")
    # is_installed's docstring: "Whether :func:`install` is in effect."
    link = re.search(r'Whether <a class="autorefs autorefs-internal"[^>]*>(.*?)</a> is in', api)
    assert link is not None and link[1] == "<code>install()</code>"
    assert 'href="#adk_live_resume.install"' in link[0]
    # a builtin has no page here: plain code, no link
    assert '<span title="TypeError"><code>TypeError</code></span>' in api
