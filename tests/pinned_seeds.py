"""Pinned soak seeds: seeds that once failed, run on every run of the fast suite.

A pinned seed guards a behaviour only while it plays the conversation it played when it failed.
``make_plan(seed)`` depends on the plan generator's code (and on what the google-adk release
offers: screening, background tools, Gemini 3.x), so a change there can silently turn a pinned
seed into another conversation. Each soak therefore keeps a golden record of every pinned seed's
``describe()`` per feature set in ``tests/pinned_plans.json``; :func:`check_recorded_plans`
fails on any difference and says how to accept it, so a person decides, seed by seed, whether
the seed still guards what its name says (or re-pins the behaviour with a new seed).

Accept intended changes with ``ADK_LIVE_RESUME_ACCEPT_PLANS=1 python3 scripts/dev.py test
tests/soak/test_pinned_plans.py`` (on each full-suite release), then read the diff of the record.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

RECORD = Path(__file__).with_name("pinned_plans.json")
ACCEPT_ENV = "ADK_LIVE_RESUME_ACCEPT_PLANS"


@dataclass(frozen=True)
class PinnedSeed:
    """A seed and the behaviour it guards (a snake_case phrase: the test id names it)."""

    seed: int
    guards: str


def pinned_params(pins: tuple[PinnedSeed, ...]) -> list[Any]:
    """pytest parameters for ``pins``, with ids that name the behaviour, then the seed."""
    return [pytest.param(p.seed, id=f"{p.guards}-seed_{p.seed}") for p in pins]


def _load() -> dict[str, Any]:
    if not RECORD.exists():
        return {}
    loaded: dict[str, Any] = json.loads(RECORD.read_text(encoding="utf-8"))
    return loaded


def check_recorded_plans(
    soak: str, features: str, pins: tuple[PinnedSeed, ...], describe: Callable[[int], str]
) -> None:
    """Assert that every pinned seed of ``soak`` plays the plan recorded for ``features`` (the
    release's feature set the plan generator reads). With ``ADK_LIVE_RESUME_ACCEPT_PLANS=1``
    the record is rewritten instead. A feature set with no record (a release of the matrix
    that offers other features than the two full-suite releases) skips, saying how to record
    it: the seeds still run there, but nobody has said what they play."""
    record = _load()
    now = {str(p.seed): {"guards": p.guards, "plan": describe(p.seed)} for p in pins}
    if os.environ.get(ACCEPT_ENV) == "1":
        record.setdefault(soak, {})[features] = now
        RECORD.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        return
    recorded: Mapping[str, Any] | None = record.get(soak, {}).get(features)
    how = (
        f"if the change is intended, check each seed still guards what its name says, then "
        f"accept it: {ACCEPT_ENV}=1 python3 scripts/dev.py test tests/soak/test_pinned_plans.py "
        f"(on each full-suite release) and commit {RECORD.name}"
    )
    if recorded is None:
        pytest.skip(f"no recorded plans of the {soak} pinned seeds for {features!r}; {how}")
    changed = [
        f"seed {seed} ({entry['guards']}):\n  recorded: {recorded.get(seed, {}).get('plan')}\n"
        f"  now:      {entry['plan']}"
        for seed, entry in now.items()
        if recorded.get(seed) != entry
    ]
    gone = sorted(set(recorded) - set(now), key=int)
    assert not changed and not gone, (
        f"the {soak} plan generator now plays other conversations for pinned seeds:\n"
        + "\n".join(changed)
        + (f"\nno longer pinned: {gone}" if gone else "")
        + f"\n{how}"
    )
