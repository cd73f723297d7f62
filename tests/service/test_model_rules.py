"""One case per rule of the current model families the fake follows from the field facts of
late 2026 (``gemini-live-protocol.md``, "Field facts of 2026-11-29"): how a task ends
(``REQUIRES_ACTION`` is a finished task).

Each runs against the fake (both dialects, the server's defaults) and, with credentials,
against the real service (see conftest.py); each records what the service did (the junit
properties the ``--report`` keeps), so a run with a key tells which way each model goes.
"""

from __future__ import annotations

import asyncio

import pytest

from .conftest import Target
from .tap import turn_complete
from .test_field_behaviours import DONE, status
from .test_protocol_assumptions import ANSWER, QUIET, _config, _say, _session

pytestmark = [pytest.mark.timeout(180)]


@pytest.mark.parametrize("family", ["GEMINI_3_8", "GEMINI_3_8_EXTENDED_THINKING"])
async def test_a_task_ends_with_idle_or_its_documented_alias_and_nothing_follows(
    target: Target, family: str
) -> None:
    """Source: the API reference and google-genai 3.6.1 document ``REQUIRES_ACTION`` as
    "Deprecated: Use IDLE instead. The server has completed all processing and background
    reasoning"; an integration that read it as "still working" hung (aiden-firmware PR 708).
    A request's last ``turnComplete`` carries ``IDLE`` or ``REQUIRES_ACTION`` and nothing of
    the request follows it: the loop reads either as a finished task. Records the status."""
    async with _session(target, _config(target), family) as (session, tap):
        await _say(session, "What is the capital of France? One word.", family)
        await tap.wait(
            lambda t: t.index(lambda f: turn_complete(f) and status(f) in DONE) is not None,
            ANSWER,
            "a turnComplete that ends the task",
        )
        done = tap.index(lambda f: turn_complete(f) and status(f) in DONE) or 0
        await asyncio.sleep(QUIET)
    target.record("done_status", status(tap.frames[done]))
    later = [f for f in tap.frames[done + 1 :] if "modelTurn" in (f.get("serverContent") or {})]
    assert not later, f"the model went on after {status(tap.frames[done])}: {later[:3]}"
    before = [status(f) for f in tap.frames[:done] if turn_complete(f)]
    assert set(before) <= {"IN_PROGRESS"}, before
