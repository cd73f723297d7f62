"""The pinned soak seeds still play the conversations they failed on (a golden record).

No sockets: each soak's plan generator is asked for every pinned seed's plan and the
description is compared with ``tests/pinned_plans.json`` (see ``tests/pinned_seeds.py``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .. import pinned_seeds
from ..pinned_seeds import check_recorded_plans
from . import test_chaos, test_voice_chaos


def test_the_pinned_voice_seeds_play_their_recorded_plans() -> None:
    check_recorded_plans(
        "voice chaos",
        test_voice_chaos.plan_features(),
        test_voice_chaos.PINNED,
        lambda seed: test_voice_chaos.make_plan(seed).describe(),
    )


def test_the_pinned_text_seeds_play_their_recorded_plans() -> None:
    check_recorded_plans(
        "chaos", "any", test_chaos.PINNED, lambda seed: test_chaos.make_plan(seed).describe()
    )


def test_a_changed_plan_fails_with_how_to_accept_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check can fail: a generator that plays another conversation is named, seed by seed."""
    record = tmp_path / "plans.json"
    monkeypatch.setattr(pinned_seeds, "RECORD", record)
    pins = (pinned_seeds.PinnedSeed(5, "some_behaviour"),)
    monkeypatch.setenv(pinned_seeds.ACCEPT_ENV, "1")
    check_recorded_plans("soak", "any", pins, lambda seed: f"plan {seed}")
    monkeypatch.delenv(pinned_seeds.ACCEPT_ENV)
    check_recorded_plans("soak", "any", pins, lambda seed: f"plan {seed}")
    with pytest.raises(AssertionError, match=r"seed 5 \(some_behaviour\)[\s\S]*ACCEPT_PLANS=1"):
        check_recorded_plans("soak", "any", pins, lambda seed: f"another plan {seed}")
    with pytest.raises(pytest.skip.Exception, match="no recorded plans"):
        check_recorded_plans("soak", "other features", pins, lambda seed: f"plan {seed}")
