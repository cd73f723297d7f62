"""One case per rule of the current model families the fake follows from the field facts of
late 2026 (``gemini-live-protocol.md``, "Field facts of 2026-11-29"): how a task ends
(``REQUIRES_ACTION`` is a finished task), the Gemini 3.8 setup rules, and what a resume
from a handle issued mid-reply says.

Each runs against the fake (both dialects, the server's defaults) and, with credentials,
against the real service (see conftest.py); each records what the service did (the junit
properties the ``--report`` keeps), so a run with a key tells which way each model goes.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from google.genai import errors, types

from .conftest import Target
from .tap import has_handle, turn_complete, update
from .test_field_behaviours import DONE, status
from .test_protocol_assumptions import ANSWER, QUIET, _config, _say, _session

#: The families' conformance names of the two Gemini 3.8 models.
PLAIN, EXTENDED = "GEMINI_3_8", "GEMINI_3_8_EXTENDED_THINKING"

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


# ---- the Gemini 3.8 setup rules ------------------------------------------------------------


def _declaring(*, json_schema: bool, behavior: types.Behavior | None) -> types.Tool:
    """A ``get_time`` function, its parameters declared as JSON schema or OpenAPI."""
    schema = {"type": "object", "properties": {"zone": {"type": "string"}}}
    shape: dict[str, Any] = (
        {"parameters_json_schema": schema}
        if json_schema
        else {
            "parameters": types.Schema(
                type=types.Type.OBJECT, properties={"zone": {"type": "STRING"}}
            )
        }
    )
    declaration = types.FunctionDeclaration(
        name="get_time", description="The time in a zone.", behavior=behavior, **shape
    )
    return types.Tool(function_declarations=[declaration])


async def _opened(target: Target, family: str, config: types.LiveConnectConfig) -> str:
    """Open a session with ``config`` and say one thing: ``"refused 1007"`` (the code) when the
    service closes it before an answer, ``"answered"`` when it answers."""
    try:
        async with _session(target, config, family) as (session, tap):
            await _say(session, "What is two plus two? One word.", family)
            await tap.wait(
                lambda t: t.index(turn_complete) is not None or t.ended, ANSWER, "an answer"
            )
            if tap.index(turn_complete) is None:
                return f"refused {getattr(tap.error, 'code', '?')}"
    except errors.APIError as refused:
        return f"refused {refused.code}"
    except ValueError as refused:  # (this google-genai refuses the field before sending)
        pytest.skip(f"this google-genai refuses the setup before sending it: {refused}")
    return "answered"


def _thinking(**fields: Any) -> dict[str, Any]:
    if "thinking_config" not in types.LiveConnectConfig.model_fields:
        pytest.skip("this google-genai sends no thinking_config on a live setup")
    return {"thinking_config": types.ThinkingConfig(**fields)}


@pytest.mark.parametrize(
    ("family", "thinking", "expected"),
    [
        (PLAIN, {"thinking_level": "LOW"}, "refused 1007"),
        (EXTENDED, {"thinking_level": "LOW"}, "answered"),
        (EXTENDED, {"thinking_budget": 512}, "refused 1007"),
    ],
    ids=["plain-any", "extended-low", "extended-budget"],
)
async def test_gemini_3_8_takes_a_thinking_config_only_as_its_rules_say(
    target: Target, family: str, thinking: dict[str, Any], expected: str
) -> None:
    """Source: ProfSynapse/nexus PR 389 (a real-socket smoke test), google-gemini/cookbook PR
    1379, promptfoo PR 10956 (notes, "Field facts of 2026-11-29"): ``gemini-3.8-live``
    closes with 1007 if ``thinkingConfig`` is present; extended thinking closes unless
    ``thinkingLevel`` is low, medium or high (``thinkingBudget`` refused). Records what the
    service did."""
    config = _config(target).model_copy(update=_thinking(**thinking))
    outcome = await _opened(target, family, config)
    target.record("setup_outcome", outcome)
    assert outcome == expected


@pytest.mark.parametrize("json_schema", [True, False], ids=["json-schema", "openapi"])
async def test_extended_thinking_needs_openapi_parameters(
    target: Target, json_schema: bool
) -> None:
    """Source: as above: extended thinking needs OpenAPI ``parameters``, not
    ``parametersJsonSchema`` (which google-adk uses for Python functions). A function
    declared NON_BLOCKING with each shape: the JSON schema one is refused with 1007."""
    tool = _declaring(json_schema=json_schema, behavior=types.Behavior.NON_BLOCKING)
    outcome = await _opened(target, EXTENDED, _config(target, tools=[tool]))
    target.record("setup_outcome", outcome)
    assert outcome == ("refused 1007" if json_schema else "answered")


async def test_extended_thinking_with_a_blocking_declaration_is_recorded(target: Target) -> None:
    """Two readings disagree: "extended thinking needs NON_BLOCKING functions" (nexus PR 389)
    and "function calling is async only" whatever the declaration (the Live API thinking
    guide, which the fake follows: it takes the setup). Records which way the service goes;
    requires only that it either answers or refuses with 1007."""
    tool = _declaring(json_schema=False, behavior=types.Behavior.BLOCKING)
    outcome = await _opened(target, EXTENDED, _config(target, tools=[tool]))
    target.record("setup_outcome", outcome)
    assert outcome in ("answered", "refused 1007")
    if target.is_fake:
        assert outcome == "answered"


# ---- a handle taken mid-reply --------------------------------------------------------------

#: A request whose answer takes a while to say.
LONG_REQUEST = "Describe a lighthouse on a stormy night in about eighty words."


def _said(frames: list[dict[str, Any]]) -> str:
    """The text the model said in ``frames``: text parts and output transcriptions."""
    pieces = []
    for frame in frames:
        content = frame.get("serverContent") or {}
        for part in (content.get("modelTurn") or {}).get("parts") or []:
            if part.get("text") and not part.get("thought"):
                pieces.append(part["text"])
        pieces.append((content.get("outputTranscription") or {}).get("text") or "")
    return "".join(pieces)


@pytest.mark.parametrize("family", ["TEXT", "NATIVE_AUDIO", "GEMINI_3_1", PLAIN])
async def test_what_a_resume_from_a_handle_issued_mid_reply_says(
    target: Target, family: str
) -> None:
    """Source: Omi probes ``lane5-session-resumption.py`` / ``-bargein.py`` (native audio)
    and pydantic-ai PR 7379 say a session resumed from a handle issued while a reply
    streamed says that reply again, glued before the next answer; the older notes say a
    generation in flight is never continued (notes, "Field facts of 2026-11-29"). Records,
    per family, whether handles come mid-reply and what a resume from one says
    (``cut_reply``: "no handle mid-reply", "replayed" or "not continued"); the loop is right
    either way (it never resumes from such a handle). The fake (defaults) issues none."""
    audio = family == "NATIVE_AUDIO"
    config = _config(target, audio=audio)
    if audio:
        config = config.model_copy(
            update={"output_audio_transcription": types.AudioTranscriptionConfig()}
        )
    async with _session(target, config, family) as (session, tap):
        await _say(session, LONG_REQUEST, family)
        await tap.wait(lambda t: t.index(turn_complete) is not None, ANSWER, "the answer")
    done = tap.index(turn_complete) or 0
    first_output = tap.index(lambda f: bool(_said([f]))) or 0
    mid = [
        update(f)
        for f in tap.frames[first_output:done]
        if has_handle(f) and (update(f) or {}).get("resumable")
    ]
    if not mid:
        target.record("cut_reply", "no handle mid-reply")
        return
    reply = _said(tap.frames[: done + 1]).strip()
    handle = str((mid[0] or {})["newHandle"])
    resumed = _config(target, handle=handle, audio=audio).model_copy(
        update={"output_audio_transcription": config.output_audio_transcription}
    )
    async with _session(target, resumed, family) as (session, tap):
        await _say(session, "Now just say the word 'done'.", family)
        await tap.wait(lambda t: t.index(turn_complete) is not None, ANSWER, "the next answer")
    after = _said(tap.frames).strip()
    head = reply[: max(12, len(reply) // 3)]
    replayed = bool(head) and head.lower() in after.lower()
    target.record("cut_reply", "replayed" if replayed else "not continued")
    target.record("answer_after_resume", after[:200])
    assert tap.index(turn_complete) is not None


# ---- speechState ----------------------------------------------------------------------------


async def test_the_server_says_when_it_hears_speech(target: Target) -> None:
    """Source: ``serverContent.speechState`` (the Vertex AI RPC reference: ``SPEECH`` /
    ``NON_SPEECH``, "not set if unchanged"; measured about 0.24 s after onset, ``NON_SPEECH``
    in the frame of the final ``inputTranscription``: notes, "Field facts of 2026-11-29").
    Voiced audio then silence on native audio: records the speech states in order; the fake
    must say ``SPEECH`` then ``NON_SPEECH``, the
    service only in that order when it says them (a synthetic voice may not pass its VAD)."""
    from adk_live_resume.testing import silence_pcm, speech_pcm

    config = _config(target, audio=True).model_copy(
        update={"input_audio_transcription": types.AudioTranscriptionConfig()}
    )
    async with _session(target, config, "NATIVE_AUDIO") as (session, tap):
        pcm = silence_pcm(0.3) + speech_pcm("hello there how are you", seconds=1.5)
        pcm += silence_pcm(1.5)
        for offset in range(0, len(pcm), 640):  # 20 ms chunks, at real time
            await session.send_realtime_input(
                audio=types.Blob(data=pcm[offset : offset + 640], mime_type="audio/pcm;rate=16000")
            )
            await asyncio.sleep(0.02)
        await asyncio.sleep(QUIET)
    content = [frame.get("serverContent") or {} for frame in tap.frames]
    states = [str(c["speechState"]) for c in content if c.get("speechState")]
    target.record("speech_states", states)
    assert states in ([], ["SPEECH"], ["SPEECH", "NON_SPEECH"]) or states[:2] == [
        "SPEECH",
        "NON_SPEECH",
    ], states
    if target.is_fake:
        assert states[:2] == ["SPEECH", "NON_SPEECH"], states
