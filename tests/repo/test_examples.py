"""Every example runs as a user would run it: a subprocess that exits 0 within seconds.

The three are started together (each is mostly waiting on imports and timers) and checked
one per test.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from adk_live_resume.testing.children import reap, spawn

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

KEY_LINES = {
    "monkeypatch_at_startup.py": [
        "embedded fake Gemini Live server",
        "reconnected: drop, attempt 1, state restored: True",
        "OK: one conversation over 2 connections",
    ],
    "resumable_agent.py": [
        "embedded fake Gemini Live server",
        "global patch installed: False",
        "OK: the resumable agent carried the conversation across the 1011 close",
    ],
    "tool_survives_go_away.py": [
        "embedded fake Gemini Live server",
        "goAway arrived while the tool was running",
        "reconnect: go_away",
        "closed by the client",
        "OK: the tool call finished, then the session moved to a new connection",
    ],
}


@pytest.fixture(scope="module")
def runs() -> Iterator[dict[str, subprocess.CompletedProcess[str]]]:
    procs = {
        name: spawn(
            [sys.executable, "-W", "ignore", str(EXAMPLES / name)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in KEY_LINES
    }
    results: dict[str, subprocess.CompletedProcess[str]] = {}
    try:
        for name, proc in procs.items():
            out, err = proc.communicate(timeout=90)
            results[name] = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
        yield results
    finally:
        for proc in procs.values():
            reap(proc, signal.SIGKILL)


def test_every_example_is_tested() -> None:
    assert sorted(p.name for p in EXAMPLES.glob("*.py")) == sorted(KEY_LINES)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", sorted(KEY_LINES))
def test_example_exits_0_with_its_key_lines(
    runs: dict[str, subprocess.CompletedProcess[str]], name: str
) -> None:
    result = runs[name]
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr[-3000:]}"
    for line in KEY_LINES[name]:
        assert line in result.stdout, f"{line!r} missing from:\n{result.stdout}"
    assert "FAILED" not in result.stdout
