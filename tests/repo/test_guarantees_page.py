"""The guarantees page stays scannable: short blocks, and a promise table whose tests exist.

docs/guarantees.md opens with one row per promise (the promise in one sentence, where it
holds, the test files that prove it). Each file a row names must exist, hold tests, and be
marked ``e2e`` (the page says so: the matrix runs those on every google-adk release). Below
the table no paragraph or list item may grow past :data:`BLOCK_LIMIT_WORDS`: a promise that
needs more is split into a paragraph and a list of its edge cases.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GUARANTEES = ROOT / "docs" / "guarantees.md"
#: The most words one paragraph or list item of the page may hold.
BLOCK_LIMIT_WORDS = 120
#: The heading of the section that holds the promise table.
TABLE_HEADING = "## At a glance"

_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+\.)\s")
_TEST_FILE = re.compile(r"`([\w/]+\.py)`")
_LINK = re.compile(r"\[([^\]]*)\]\(#([^)\s]+)\)")
#: The end of one sentence and the start of the next.
_SENTENCE_BREAK = re.compile(r"[.!?]\s+[A-Z`\[(]")


def blocks(markdown: str) -> list[str]:
    """The page's paragraphs and list items (a nested item on its own), each as one string;
    headings, tables and fenced code are left out."""
    found: list[str] = []
    current: list[str] = []
    fenced = False

    def flush() -> None:
        if current:
            found.append(" ".join(line.strip() for line in current))
            current.clear()

    for line in markdown.splitlines():
        if line.lstrip().startswith("```"):
            flush()
            fenced = not fenced
            continue
        if fenced:
            continue
        stripped = line.strip()
        if not stripped or stripped.startswith("#") or stripped.startswith("|"):
            flush()
            continue
        if _LIST_ITEM.match(line):
            flush()
        current.append(line)
    flush()
    return found


def long_blocks(markdown: str, limit: int = BLOCK_LIMIT_WORDS) -> list[str]:
    """Each block over ``limit`` words, as its word count and opening words."""
    return [
        f"{len(block.split())} words: {' '.join(block.split()[:12])} ..."
        for block in blocks(markdown)
        if len(block.split()) > limit
    ]


def promise_rows(markdown: str) -> list[list[str]]:
    """The promise table's rows below its header, each as its cells."""
    section = markdown.split(TABLE_HEADING, 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows[2:]]


def slug(heading: str) -> str:
    """The anchor the site's Markdown gives a heading (Python-Markdown's ``toc`` slugify)."""
    text = re.sub(r"[^\w\s-]", "", heading.replace("`", "")).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(markdown: str) -> set[str]:
    return {slug(line.lstrip("#")) for line in markdown.splitlines() if line.startswith("#")}


def file_problems(path: str) -> list[str]:
    """What is wrong with a test file a promise row names (nothing for a good one), found by
    its name in any folder of the tests."""
    found = sorted((ROOT / "tests").rglob(path))
    if not found:
        return [f"{path} does not exist"]
    source = found[0]
    tree = ast.parse(source.read_text(encoding="utf-8"))
    tests = [
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.name.startswith("test_")
    ]
    problems = [] if tests else [f"{path} holds no test function"]
    if "pytest.mark.e2e" not in source.read_text(encoding="utf-8"):
        problems.append(f"{path} is not marked e2e: the matrix would not run it on every release")
    return problems


def row_problems(row: list[str], page_anchors: set[str]) -> list[str]:
    """What is wrong with one promise row (nothing for a good one)."""
    if len(row) != 3:
        return [f"a promise row needs 3 cells (promise, holds on, proved by): {row}"]
    promise, holds_on, proved_by = row
    problems: list[str] = []
    prose = _LINK.sub(r"\1", promise)
    if not prose.endswith(".") or _SENTENCE_BREAK.search(prose):
        problems.append(f"the promise is not one sentence: {promise!r}")
    links = _LINK.findall(promise)
    if not links or links[0][1] not in page_anchors:
        problems.append(f"the promise does not link to a section of the page: {promise!r}")
    if not holds_on:
        problems.append(f"the promise says not where it holds: {promise!r}")
    files = _TEST_FILE.findall(proved_by)
    if not files:
        problems.append(f"the promise names no test file: {promise!r}")
    for path in files:
        problems.extend(file_problems(path))
    return problems


def test_no_block_of_the_guarantees_page_is_over_the_limit() -> None:
    too_long = long_blocks(GUARANTEES.read_text(encoding="utf-8"))
    assert not too_long, (
        f"docs/guarantees.md: split these blocks (at most {BLOCK_LIMIT_WORDS} words: the "
        "promise in a sentence, the mechanism in short paragraphs, the edge cases as a list):\n"
        + "\n".join(too_long)
    )


def test_every_promise_row_is_one_sentence_and_names_tests_that_exist() -> None:
    page = GUARANTEES.read_text(encoding="utf-8")
    rows = promise_rows(page)
    assert len(rows) >= 9, f"the promise table has {len(rows)} rows"
    page_anchors = anchors(page)
    problems = [problem for row in rows for problem in row_problems(row, page_anchors)]
    assert not problems, "docs/guarantees.md, the promise table:\n" + "\n".join(problems)


def test_the_block_check_counts_paragraphs_and_list_items_apart() -> None:
    long = " ".join(["word"] * 121)
    page = (
        f"# T\n\n{long}\n\n- short item\n  continued\n- {long}\n  - nested\n\n"
        f"| {long} |\n|---|\n\n```\n{long}\n```\n"
    )
    assert blocks(page) == [long, "- short item continued", f"- {long}", "- nested"]
    assert [entry.split(":")[0] for entry in long_blocks(page)] == ["121 words", "122 words"]


@pytest.mark.parametrize(
    ("row", "problem"),
    [
        (["[A](#a): one. Two.", "x", "`test_resume_e2e.py`"], "not one sentence"),
        (["[A](#nowhere): one.", "x", "`test_resume_e2e.py`"], "does not link"),
        (["[A](#a): one.", "x", "no file"], "names no test file"),
        (["[A](#a): one.", "x", "`test_missing_e2e.py`"], "does not exist"),
        (["[A](#a): one.", "x", "`helpers.py`"], "holds no test function"),
        (["[A](#a): one.", "x", "`test_policy.py`"], "not marked e2e"),
    ],
)
def test_a_bad_promise_row_is_told_apart(row: list[str], problem: str) -> None:
    problems = row_problems(row, {"a"})
    assert any(problem in entry for entry in problems), problems
    good = ["[A](#a): one.", "x", "`test_resume_e2e.py`"]
    assert row_problems(good, {"a"}) == []
