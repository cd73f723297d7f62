"""MkDocs hooks of the documentation site: what the site takes from the code, and its checks.

Loaded by ``mkdocs.yml`` (``hooks:``); ``python3 scripts/dev.py docs`` builds the site with
them. They guarantee:

- the ResumePolicy reference (``<!-- resume-policy-fields -->`` in a page) is generated from
  :class:`adk_live_resume.ResumePolicy` itself: every field, its type, its default, its
  ``ADK_LIVE_RESUME_<FIELD>`` variable, its docstring and what construction refuses (the
  messages come from ``ResumePolicy``'s own validation, by probing it), never copied by hand;
- the map of the package (``<!-- package-modules -->`` in a page) is generated from each
  module's docstring: its name and the first line, the one idea it holds;
- the benchmark plots (``benchmarks/plots/*.png``, where the benchmarks write them) are served
  under ``plots/`` without a copy in ``docs/``;
- the build fails, naming each one, if a public name (``adk_live_resume.__all__``,
  ``adk_live_resume.testing.__all__``, ``ResumePolicy``'s fields) has no docstring or does not
  appear in the built API reference;
- the build fails, naming the page and the text, if a Sphinx role (``:class:`X```) shows raw
  on any built page (``scripts/docs_sphinx_roles.py`` renders those of the docstrings).
"""

from __future__ import annotations

import ast
import dataclasses
import html
import importlib.util
import inspect
import math
import re
import types
import typing
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PLOTS = ROOT / "benchmarks" / "plots"
POLICY_MARKER = "<!-- resume-policy-fields -->"
MODULES_MARKER = "<!-- package-modules -->"
PACKAGE = ROOT / "adk_live_resume"
#: The pages of the API reference, relative to the site directory.
REFERENCE_DIR = "reference"
#: Values tried on each field to show what construction refuses (only refusals that name
#: the field are kept; the messages are ResumePolicy's own).
_PROBES: dict[type, tuple[object, ...]] = {
    int: (0, -1, 10**9, True),
    float: (-1.0, 2.0, 10.0**9, math.nan),
    bool: (1,),
}


def _field_docstrings(cls: type) -> dict[str, str]:
    """The attribute docstrings (a string right after the field) of a dataclass's fields,
    its base classes' included."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if not dataclasses.is_dataclass(klass):
            continue
        tree = ast.parse(inspect.cleandoc("\n" + inspect.getsource(klass)))
        body = tree.body[0].body  # type: ignore[attr-defined]
        for node, after in zip(body, [*body[1:], None], strict=True):
            is_field = isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
            if is_field and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant):
                docs[node.target.id] = inspect.cleandoc(str(after.value.value))  # type: ignore[union-attr]
    return docs


def _type_name(hint: Any) -> str:
    if isinstance(hint, type) and not typing.get_args(hint):
        return hint.__name__
    return str(hint).replace("typing.", "")


def _without_none(hint: Any) -> Any:
    """``X`` for ``X | None``; any other annotation as it is."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return hint


def _default(value: object) -> str:
    if isinstance(value, frozenset):
        return ", ".join(str(v) for v in sorted(value))
    return repr(value)


def _refusals(policy_cls: Any, name: str, hint: Any) -> list[str]:
    """What ``policy_cls(name=...)`` refuses, in its own words, for a few probe values."""
    hint = _without_none(hint)
    origin = typing.get_origin(hint)
    probes: tuple[object, ...] = _PROBES.get(hint, ())
    if origin is frozenset:
        probes = (frozenset({1007}), frozenset({99}), [1000])
    found: list[str] = []
    for value in probes:
        try:
            policy_cls(**{name: value})
        except (TypeError, ValueError) as error:
            for part in str(error).split(": ", 1)[-1].split("; "):
                if name in part and part not in found:
                    found.append(part)
    return found


def _markdown_cell(text: str) -> str:
    text = re.sub(r":(?:class|func|meth|mod|attr):`~?([^`]+)`", r"`\1`", text)
    return text.replace("``", "`").replace("\n", " ").replace("|", "\\|")


def policy_fields_table(policy_cls: type | None = None) -> str:
    """A Markdown table of every field of :class:`ResumePolicy` (or of ``policy_cls``, a
    subclass), made from the class itself.

    An optional field (``X | None``) says in its variable's cell how to set it to ``None``.
    """
    from adk_live_resume import ResumePolicy
    from adk_live_resume.launch.config import ENV_PREFIX, NONE_WORD

    policy_cls = policy_cls or ResumePolicy
    hints = typing.get_type_hints(policy_cls)
    docs = _field_docstrings(policy_cls)
    rows = [
        "| field | type | default | environment variable | meaning | refused |",
        "|---|---|---|---|---|---|",
    ]
    for item in dataclasses.fields(policy_cls):
        default = item.default
        if default is dataclasses.MISSING and item.default_factory is not dataclasses.MISSING:
            default = item.default_factory()
        hint = hints[item.name]
        refused = "<br>".join(_markdown_cell(r) for r in _refusals(policy_cls, item.name, hint))
        variable = f"`{ENV_PREFIX}{item.name.upper()}`"
        if _without_none(hint) is not hint:
            variable += f"<br>`{NONE_WORD}` sets it to `None`"
        rows.append(
            f"| `{item.name}` | `{_type_name(hint)}` | `{_default(default)}` "
            f"| {variable} | {_markdown_cell(docs.get(item.name, ''))} | {refused} |"
        )
    return "\n".join(rows)


def package_modules_table() -> str:
    """A Markdown table of the package's modules, each with its docstring's first line."""
    rows = ["| module | the one idea it holds |", "|---|---|"]
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        first = docstring.split("\n", 1)[0]
        rows.append(f"| `{'.'.join(parts)}` | {_markdown_cell(first)} |")
    return "\n".join(rows)


def on_page_markdown(markdown: str, **_: Any) -> str:
    """Put the generated tables where a page asks for them."""
    if POLICY_MARKER in markdown:
        markdown = markdown.replace(POLICY_MARKER, policy_fields_table())
    if MODULES_MARKER in markdown:
        markdown = markdown.replace(MODULES_MARKER, package_modules_table())
    return markdown


def on_files(files: Any, config: Any, **_: Any) -> Any:
    """Serve ``benchmarks/plots/*.png`` as ``plots/<name>.png``."""
    from mkdocs.structure.files import File

    for plot in sorted(PLOTS.glob("*.png")):
        files.append(
            File(
                f"plots/{plot.name}",
                src_dir=str(PLOTS.parent),
                dest_dir=config["site_dir"],
                use_directory_urls=config["use_directory_urls"],
            )
        )
    return files


def public_names() -> list[str]:
    """Every public name the reference must document, dotted in full."""
    import adk_live_resume
    import adk_live_resume.testing
    from adk_live_resume import ResumePolicy

    names = [f"adk_live_resume.{n}" for n in adk_live_resume.__all__]
    names += [f"adk_live_resume.testing.{n}" for n in adk_live_resume.testing.__all__]
    names += [f"adk_live_resume.ResumePolicy.{f.name}" for f in dataclasses.fields(ResumePolicy)]
    return names


def undocumented(names: list[str]) -> list[str]:
    """The names whose object has no docstring of its own (read statically, as the site)."""
    import griffe

    package = griffe.load("adk_live_resume", search_paths=[str(ROOT)], resolve_aliases=True)
    missing = []
    for dotted in names:
        try:
            target = package[dotted.removeprefix("adk_live_resume.")]
            docstring = target.docstring
        except (KeyError, griffe.AliasResolutionError):
            missing.append(f"{dotted} (not found by griffe)")
            continue
        if docstring is None or not docstring.value.strip():
            missing.append(dotted)
    return missing


def not_in_reference(names: list[str], site_dir: Path) -> list[str]:
    """The names with no anchor (``id="<dotted name>"``) in the built API reference."""
    anchors: set[str] = set()
    for page in (site_dir / REFERENCE_DIR).rglob("*.html"):
        anchors.update(html.unescape(a) for a in re.findall(r'id="([^"]+)"', page.read_text()))
    return [n for n in names if n not in anchors]


def _sphinx_roles() -> ModuleType:
    """``scripts/docs_sphinx_roles.py`` (the griffe extension that renders Sphinx roles)."""
    spec = importlib.util.spec_from_file_location(
        "docs_sphinx_roles", Path(__file__).with_name("docs_sphinx_roles.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def sphinx_roles_left(site_dir: Path) -> list[str]:
    """Every Sphinx role shown raw on a built page: ``page: the text``."""
    found: list[str] = _sphinx_roles().roles_left(site_dir)
    return found


def on_post_build(config: Any, **_: Any) -> None:
    """Fail the build, naming each, if a public name is undocumented or not in the reference,
    or if a page shows a Sphinx role raw."""
    from mkdocs.exceptions import PluginError

    raw = sphinx_roles_left(Path(config["site_dir"]))
    if raw:
        raise PluginError(
            "Sphinx roles show raw on the built site (scripts/docs_sphinx_roles.py renders "
            "those of docstrings; in a page, write a link or `code`):\n  " + "\n  ".join(raw)
        )
    names = public_names()
    problems = [f"no docstring: {n}" for n in undocumented(names)]
    problems += [
        f"not in the API reference (docs/{REFERENCE_DIR}/): {n}"
        for n in not_in_reference(names, Path(config["site_dir"]))
    ]
    if problems:
        raise PluginError(
            "every public name needs a docstring and a place in the API reference "
            "(add a docstring to the object, or a '::: <name>' line to a page under "
            f"docs/{REFERENCE_DIR}/):\n  " + "\n  ".join(problems)
        )
