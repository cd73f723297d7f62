"""The lifecycle diagram in the development guide is the one its table draws."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "state_diagram.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("state_diagram", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_guides_lifecycle_diagram_is_drawn_from_the_table() -> None:
    script = _script()
    text = script.GUIDE.read_text(encoding="utf-8")
    assert script.with_diagram(text) == text, (
        "docs/development.md's lifecycle diagram is stale: run "
        "python3 scripts/state_diagram.py --write"
    )


def test_the_diagram_has_an_arrow_for_each_change_of_state_a_rule_declares() -> None:
    diagram = _script().diagram()
    assert "MOVING --> CLOSE_FIRST: AheadStarted" in diagram
    assert "DRAINING --> RETIRED: MessageRead" in diagram
    assert "RETIRED --> MOVING" not in diagram  # (final)
