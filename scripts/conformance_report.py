#!/usr/bin/env python3
"""Turn the conformance suite's JUnit XML into a Markdown report a user can paste into an issue.

``python3 scripts/dev.py conformance --report FILE`` runs the suite (``tests/service/``) with
``--junitxml`` and then this script in the same environment::

    python scripts/conformance_report.py RESULTS.xml REPORT.md

The report names the versions (Python, google-genai, google-adk, adk-live-resume), the
targets (the fake in both dialects; the real service, or why it was skipped), a count per
outcome and target, every case (file and test, its other parameters kept) with its outcome on
each target and the model it ran against there (the case's junit property ``model``, which
``tests/service/conftest.py`` records), and every failure with its message and model.
Guarantee: resumption handles and API keys in failure messages are cut to short prefixes
(:func:`adk_live_resume.observe.log_redaction.redact_credentials`, plus bare UUIDs, the shape the
service's handles have), so the report can be posted as it is.
"""

from __future__ import annotations

import collections
import datetime
import importlib.metadata
import platform
import re
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

#: The suite's targets (tests/service/conftest.py), longest first.
TARGETS = ("fake-vertex", "real-vertex", "real-gemini-api", "fake", "real")
_UUID = re.compile(r"\b([0-9a-f]{8})-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I)
#: Lines of a failure's message kept in the report.
MESSAGE_LINES = 30


@dataclass(frozen=True)
class Case:
    """One test case's outcome: "passed", "failed", "error" or "skipped"."""

    name: str
    target: str
    outcome: str
    message: str = ""
    #: The test's file without ``.py`` (``test_field_shapes``; "" when the XML names none).
    module: str = ""
    #: The model(s) the case ran against (its ``model`` property; "" when it asked none).
    model: str = ""

    @property
    def case(self) -> str:
        """The case the test asks, whatever the target: its file and its name with the target
        taken out of its parameters (``test_field_shapes::test_x[TEXT]``)."""
        base, _, params = self.name.partition("[")
        inner = params.rstrip("]")
        if self.target != "-":
            inner = re.sub(rf"(^|-){re.escape(self.target)}(?=-|$)", "", inner, count=1)
            inner = inner.strip("-")
        name = f"{base}[{inner}]" if inner else base
        return f"{self.module}::{name}" if self.module else name


def read_cases(xml_text: str) -> list[Case]:
    """The cases of a JUnit XML report (pytest's ``--junitxml``)."""
    cases = []
    for element in ET.fromstring(xml_text).iter("testcase"):
        name = element.get("name", "?")
        outcome, message = "passed", ""
        for kind in ("failure", "error", "skipped"):
            found = element.find(kind)
            if found is not None:
                outcome = "failed" if kind == "failure" else kind
                message = (found.get("message") or "") + "\n" + (found.text or "")
                break
        module = element.get("classname", "").rpartition(".")[2]
        model = next(
            (p.get("value", "") for p in element.iter("property") if p.get("name") == "model"),
            "",
        )
        cases.append(Case(name, target_of(name), outcome, message.strip(), module, model))
    return cases


def target_of(name: str) -> str:
    """The target in a test id's parameters (``test_x[fake-vertex-TEXT]``), or "-"."""
    inner = name.partition("[")[2].rstrip("]")
    for target in TARGETS:
        if re.search(rf"(^|-){re.escape(target)}(-|$)", inner):
            return target
    return "-"


def redact(text: str) -> str:
    """``text`` with handles (quoted, or bare UUIDs) and keys cut to short prefixes."""
    from adk_live_resume.observe.log_redaction import redact_credentials

    return _UUID.sub(lambda m: m.group(1) + "-…", redact_credentials(text))


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def render(cases: list[Case], *, versions: dict[str, str], when: str) -> str:
    """The Markdown report (pure)."""
    lines = ["# adk-live-resume conformance report", "", f"Run {when}.", ""]
    lines += [f"- {name}: {value}" for name, value in versions.items()]
    counts: collections.Counter[tuple[str, str]] = collections.Counter(
        (c.target, c.outcome) for c in cases
    )
    targets = sorted({c.target for c in cases})
    outcomes = ["passed", "failed", "error", "skipped"]
    lines += ["", "| target | " + " | ".join(outcomes) + " |", "|---" * 5 + "|"]
    for target in targets:
        row = " | ".join(str(counts[(target, o)]) for o in outcomes)
        lines.append(f"| {target} | {row} |")
    real_skips = sorted(
        {c.message.splitlines()[0] for c in cases if c.target == "real" and c.message}
    )
    if real_skips:
        lines += ["", "The real service was not tried: " + "; ".join(real_skips)]
    lines += ["", "## Cases", "", *_case_table(cases, targets)]
    failed = [c for c in cases if c.outcome in ("failed", "error")]
    lines += ["", "## Failures", ""]
    if not failed:
        lines.append("None.")
    for case in failed:
        message = "\n".join(redact(case.message).splitlines()[:MESSAGE_LINES])
        model = f", model {case.model}" if case.model else ""
        lines += [f"### `{case.name}` ({case.outcome}{model})", "", "```", message, "```", ""]
    return "\n".join(lines).rstrip() + "\n"


def _case_table(cases: list[Case], targets: list[str]) -> list[str]:
    """One row per case, in the suite's order, with its outcome on each target and the model
    it ran against there, in brackets ("" where it did not run there; "no target": the cases
    that ask no service, as the model names')."""
    outcomes: dict[str, dict[str, str]] = {}
    for case in cases:
        cell = f"{case.outcome} ({case.model})" if case.model else case.outcome
        outcomes.setdefault(case.case, {})[case.target] = cell
    header = " | ".join("no target" if target == "-" else target for target in targets)
    lines = [f"| case | {header} |", "|---" * (len(targets) + 1) + "|"]
    for name, where in outcomes.items():
        row = " | ".join(where.get(target, "") for target in targets)
        lines.append(f"| `{name}` | {row} |")
    return lines


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: conformance_report.py RESULTS.xml REPORT.md", file=sys.stderr)
        return 2
    cases = read_cases(Path(argv[0]).read_text(encoding="utf-8"))
    versions = {
        "Python": platform.python_version(),
        "google-genai": _version("google-genai"),
        "google-adk": _version("google-adk"),
        "adk-live-resume": _version("adk-live-resume"),
    }
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    Path(argv[1]).write_text(render(cases, versions=versions, when=when), encoding="utf-8")
    print(f"conformance report written to {argv[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
