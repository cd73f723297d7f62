"""Sphinx cross-reference roles in docstrings, rendered as links on the documentation site.

The package's docstrings use Sphinx's roles (``:class:`ResumePolicy```, ``:func:`install```,
``:mod:`.hooks```...), which mkdocstrings leaves as text. This griffe extension (loaded by
``mkdocs.yml``: ``extensions:`` of the Python handler) rewrites each role, when griffe loads
the package, into an *optional* mkdocs-autorefs cross-reference. It guarantees:

- every role outside code spans and fenced code blocks is rewritten: none reaches the page;
- the target is looked up as Sphinx would, from the docstring's own place (its object, that
  object's parents and their imports; a leading ``.`` from the enclosing packages), so that
  ``:func:`install``` in ``patch.py`` names ``adk_live_resume.launch.patch.install``;
- a target the site documents becomes a link; any other (a private module, a builtin such as
  ``TypeError``) becomes plain code, never a broken link and never a build warning;
- the text shown is Sphinx's: the target as written, its last part only after ``~``, an
  explicit ``title <target>``'s title, and ``()`` after a function or method.

The source files are not touched: docstrings keep their Sphinx roles. ``scripts/docs_hooks.py``
checks the built site for any role left (:data:`ROLE_IN_HTML`).
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import griffe

#: Sphinx's Python-domain roles, and the general ones a docstring may use.
ROLES = (
    "class",
    "func",
    "meth",
    "mod",
    "attr",
    "data",
    "exc",
    "obj",
    "const",
    "type",
    "term",
    "ref",
    "doc",
)
_ROLE = rf"(?::py)?:(?P<role>{'|'.join(ROLES)}):"
#: A role in a docstring, or a piece of code it must not be looked for in (a fenced block,
#: a double-backtick code span); only the ``role`` alternative is rewritten.
_ROLE_OR_CODE = re.compile(
    r"(?P<fence>^[ \t]*```.*?^[ \t]*```)"
    r"|(?P<span>``.+?``)"
    rf"|{_ROLE}`(?P<body>[^`]+)`",
    flags=re.DOTALL | re.MULTILINE,
)
#: A role as it looks on a built page when nothing rendered it: its backticks became
#: ``<code>`` (a role shown inside code, ``<code>:class:`X`</code>``, is code and stays).
ROLE_IN_HTML = re.compile(rf"{_ROLE}<code>")
#: ``title <target>``: a role with an explicit title.
_EXPLICIT_TITLE = re.compile(r"^(?P<title>.+?)\s*<(?P<target>[^<>]+)>$", flags=re.DOTALL)
_CALLABLE_ROLES = frozenset({"func", "meth"})


def shown_and_target(role: str, body: str) -> tuple[str, str]:
    """What Sphinx shows for ``:role:`body``` and the target it names."""
    explicit = _EXPLICIT_TITLE.match(body.strip())
    if explicit:
        return " ".join(explicit["title"].split()), explicit["target"].strip()
    target = body.strip()
    short = target.startswith("~")
    target = target.lstrip("~")
    shown = target.rsplit(".", 1)[-1] if short else target.lstrip(".")
    if role in _CALLABLE_ROLES and not shown.endswith(")"):
        shown += "()"
    return shown, target


def rewrite(text: str, resolve: Callable[[str], str | None]) -> str:
    """``text`` with every Sphinx role made an optional autorefs cross-reference.

    ``resolve`` turns a target as written into the full dotted path of the object it names,
    or ``None`` when it names none; the written target (without a leading ``.``) is then
    used as it is, so a documented full path still links.
    """

    def replace(match: re.Match[str]) -> str:
        if match["fence"] or match["span"]:
            return match[0]
        shown, target = shown_and_target(match["role"], match["body"])
        identifier = resolve(target) or target.lstrip(".")
        return f'<autoref identifier="{html.escape(identifier)}" optional>`{shown}`</autoref>'

    return _ROLE_OR_CODE.sub(replace, text)


def _lookup(collection: Any, path: str) -> str | None:
    """The canonical path of the object griffe knows at the dotted ``path`` (where it is
    defined, which the site's anchors also answer to), ``path`` itself if that cannot be
    told, or ``None`` if griffe knows no such object."""
    errors = (KeyError, ValueError, griffe.AliasResolutionError, griffe.CyclicAliasError)
    try:
        found = collection[path]
    except errors:
        return None
    try:
        return str(found.canonical_path)
    except errors:
        return path


def resolver(obj: griffe.Object) -> Callable[[str], str | None]:
    """Sphinx's lookup of a role's target from the docstring of ``obj`` (see the module)."""

    def resolve(target: str) -> str | None:
        collection = obj.modules_collection
        candidates: list[str] = []
        if target.startswith("."):
            module: griffe.Object | None = obj.module
            while module is not None:
                candidates.append(f"{module.path}.{target.lstrip('.')}")
                module = module.parent
        else:
            candidates.append(target)
            first, _, rest = target.partition(".")
            try:
                found = obj.resolve(first)
            except (griffe.NameResolutionError, ValueError):
                found = None
            if found:
                candidates.append(f"{found}.{rest}" if rest else found)
        for path in candidates:
            found = _lookup(collection, path)
            if found:
                return found
        return None

    return resolve


def _objects(obj: griffe.Object) -> Iterator[griffe.Object]:
    """``obj`` and every object defined in it (imported names are visited where defined)."""
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from _objects(member)  # type: ignore[arg-type]


def roles_left(site_dir: Path) -> list[str]:
    """Every Sphinx role shown raw on a built page of ``site_dir``: ``page: the text``."""
    found = []
    for page in sorted(site_dir.rglob("*.html")):
        text = page.read_text(encoding="utf-8")
        for match in ROLE_IN_HTML.finditer(text):
            snippet = text[match.start() : match.end() + 60].split("</code>")[0]
            found.append(f"{page.relative_to(site_dir)}: {snippet}</code>")
    return found


class SphinxRoles(griffe.Extension):
    """Rewrites the Sphinx roles of every docstring of a loaded package (see the module)."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        """Rewrite the docstrings of ``pkg`` and of everything defined in it."""
        for obj in _objects(pkg):
            if obj.docstring is not None:
                obj.docstring.value = rewrite(obj.docstring.value, resolver(obj))
