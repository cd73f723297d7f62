"""The conformance suite's model names: the same family on the fake as on the real service.

Pure (no sockets): each family's real-service names (``REAL_MODELS``) and its fake name
(``FAKE_MODELS``) fall in the same fake family, so a case that passes on the fake asks the
real service the same question; the fake also recognises older names whose service status is
unconfirmed (``gemini-live-protocol.md``: two Live previews were reported shut down on
2026-11-17, ids unconfirmed), so an app that still names one tests as before.
"""

from __future__ import annotations

import pytest

from adk_live_resume.testing.families import (
    GEMINI_2_LIVE,
    GEMINI_3_1_LIVE,
    GEMINI_3_8_EXTENDED_THINKING,
    GEMINI_3_8_LIVE,
    NATIVE_AUDIO_2_5,
    Family,
    family_for,
)

from .conftest import FAKE_MODELS, REAL_MODELS

pytestmark = pytest.mark.timeout(10)

FAMILIES = {
    "TEXT": GEMINI_2_LIVE,
    "NATIVE_AUDIO": NATIVE_AUDIO_2_5,
    "GEMINI_3_1": GEMINI_3_1_LIVE,
    "GEMINI_3_8": GEMINI_3_8_LIVE,
    "GEMINI_3_8_EXTENDED_THINKING": GEMINI_3_8_EXTENDED_THINKING,
}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_the_real_and_the_fake_name_of_a_family_agree(family: str) -> None:
    assert family_for(FAKE_MODELS[family]) is FAMILIES[family]
    for name in REAL_MODELS[family]:
        if name is not None:
            assert family_for(name) is FAMILIES[family], name


#: Live models the service shut down (the Gemini API changelog, 2025-12-09; notes "Field facts
#: of 2026-11-29"): no default may name one.
SHUT_DOWN = {"gemini-2.0-flash-live-001", "gemini-live-2.5-flash-preview"}


def test_no_default_names_a_model_that_was_shut_down() -> None:
    defaults = {name for names in REAL_MODELS.values() for name in names if name}
    assert not defaults & SHUT_DOWN
    assert REAL_MODELS["TEXT"][0] is None, "the Gemini API serves no Gemini 2.x Live model"


def test_the_gemini_3_8_names_are_served_on_both_backends() -> None:
    for family in ("GEMINI_3_8", "GEMINI_3_8_EXTENDED_THINKING"):
        assert None not in REAL_MODELS[family]
    # 3.1 Live is served on the Gemini API only
    assert REAL_MODELS["GEMINI_3_1"][1] is None


@pytest.mark.parametrize(
    ("name", "family"),
    [
        ("gemini-live-2.5-flash-preview", GEMINI_2_LIVE),
        ("gemini-2.0-flash-live-001", GEMINI_2_LIVE),
        ("gemini-live-2.5-flash", GEMINI_2_LIVE),
        ("gemini-2.5-flash-native-audio-preview-09-2025", NATIVE_AUDIO_2_5),
        ("gemini-live-2.5-flash-native-audio", NATIVE_AUDIO_2_5),
        ("gemini-2.5-flash-preview-native-audio-dialog", NATIVE_AUDIO_2_5),
    ],
)
def test_the_fake_recognises_older_names(name: str, family: Family) -> None:
    assert family_for(name) is family
