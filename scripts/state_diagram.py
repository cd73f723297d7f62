"""Draws a connection's lifecycle diagram from its table, into the development guide.

The diagram (mermaid, between ``<!-- lifecycle-diagram -->`` and
``<!-- /lifecycle-diagram -->`` in ``docs/development.md``) has one arrow for each pair of
states a rule of :data:`adk_live_resume.rules.connection_state.TABLE` may lead from and to,
labelled with the events that do; a rule that stays in its state, an ignored pair and a
misfit draw nothing (the table names them). Standard library only.

    python3 scripts/state_diagram.py            # print the diagram
    python3 scripts/state_diagram.py --write    # write it into docs/development.md
    python3 scripts/state_diagram.py --check    # exit 1 if the guide's diagram is stale

``tests/repo/test_state_diagram.py`` fails when the guide's diagram is not the table's.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from adk_live_resume.rules.connection_state import FINAL, TABLE, Rule, State  # noqa: E402
from adk_live_resume.rules.lifecycle_events import EVENTS  # noqa: E402

GUIDE = ROOT / "docs" / "development.md"
BEGIN = "<!-- lifecycle-diagram -->"
END = "<!-- /lifecycle-diagram -->"


def diagram() -> str:
    """The mermaid block: every arrow of the table, in the order of the states and events."""
    lines = ["```mermaid", "stateDiagram-v2", f"    [*] --> {State.CONNECTED.name}"]
    for source in State:
        for target in State:
            events = [
                event.__name__
                for event in EVENTS
                if isinstance(entry := TABLE[(source, event)], Rule) and target in entry.to
            ]
            if events:
                lines.append(f"    {source.name} --> {target.name}: {', '.join(events)}")
    lines += [f"    {state.name} --> [*]" for state in State if state in FINAL]
    lines.append("```")
    return "\n".join(lines) + "\n"


def with_diagram(text: str) -> str:
    """``text`` (the guide) with the diagram between its markers."""
    head, begin, rest = text.partition(BEGIN)
    _, end, tail = rest.partition(END)
    if not begin or not end:
        raise SystemExit(f"{GUIDE} needs the markers {BEGIN} and {END}, in that order")
    return f"{head}{BEGIN}\n{diagram()}{END}{tail}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="write the diagram into the guide")
    mode.add_argument("--check", action="store_true", help="exit 1 if the guide's is stale")
    args = parser.parse_args(argv)
    if not (args.write or args.check):
        sys.stdout.write(diagram())
        return 0
    text = GUIDE.read_text(encoding="utf-8")
    fresh = with_diagram(text)
    if args.check:
        if fresh != text:
            print(f"{GUIDE} has a stale lifecycle diagram: run {sys.argv[0]} --write")
            return 1
        return 0
    GUIDE.write_text(fresh, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
