"""Server messages read by pydantic's JSON validation, equal to google-genai's own reading
(``message_decoding``).

Against the real SDK: for every message, random ones included (Hypothesis: text, audio in both
base64 alphabets, transcriptions, turn ends, usage, handles, tool calls, goAway, with unknown
fields and nulls here and there), the message a decoding session returns equals, field for
field and in what it says was set, what ``AsyncSession._receive`` returns, and a close is the
SDK's own error. End to end: the real ``Runner.run_live`` reads a conversation through it.
"""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

import pydantic
import pytest
from google.genai import errors, types
from hypothesis import given
from hypothesis import strategies as st
from websockets.exceptions import ConnectionClosedError
from websockets.frames import Close

import adk_live_resume
from adk_live_resume.compat import genai_compat, message_decoding
from adk_live_resume.compat.message_decoding import PROBES, MessageDecoder
from adk_live_resume.observe.callbacks import RunStats
from adk_live_resume.testing import FakeLiveServer
from adk_live_resume.testing.driver import LiveDriver

from ...conftest import AgentFactory
from ...helpers import genai_session


class _Messages:
    """A websocket whose reads give ``messages`` in turn (an exception in them is raised)."""

    def __init__(self, *messages: Any) -> None:
        self.messages = list(messages)

    async def recv(self, decode: bool | None = None) -> Any:
        raw = self.messages.pop(0)
        if isinstance(raw, BaseException):
            raise raw
        return raw


def _session(*messages: Any, vertex: bool = False) -> Any:
    return genai_session(vertex=vertex, websocket=_Messages(*messages))


def _read(session: Any) -> Any:
    """One message as ``session.receive`` reads it, or the exception it raises."""

    async def once() -> Any:
        return await session._receive()

    try:
        return asyncio.run(once())
    except Exception as error:
        return error


def _sets(value: Any) -> Any:
    """What a message says was set, all the way down (pydantic's ``==`` leaves it out)."""
    if isinstance(value, pydantic.BaseModel):
        return {name: _sets(getattr(value, name)) for name in sorted(value.model_fields_set)}
    if isinstance(value, list):
        return [_sets(item) for item in value]
    return None


def _both_ways(raw: Any) -> tuple[Any, Any, MessageDecoder]:
    """``raw`` read by the SDK, and by a session the decoder was installed on."""
    decoder = MessageDecoder()
    decoding = _session(raw)
    assert decoder.install(decoding)
    return _read(_session(raw)), _read(decoding), decoder


def _assert_same(sdk: Any, ours: Any) -> None:
    if isinstance(sdk, Exception):
        assert type(ours) is type(sdk) and str(ours) == str(sdk)
        return
    assert ours == sdk
    assert _sets(ours) == _sets(sdk)


@pytest.mark.parametrize("probe", PROBES, ids=range(len(PROBES)))
def test_every_probe_is_read_the_fast_way_as_the_sdk_reads_it(probe: bytes) -> None:
    """(but a probe with a field the installed google-genai lacks: ``interactionStatus`` in
    1.x, which the SDK drops, as it does reading it)"""
    sdk, ours, decoder = _both_ways(probe)
    _assert_same(sdk, ours)
    known = message_decoding.fast_message(probe, frozenset(types.LiveServerMessage.model_fields))
    assert decoder.decoded == (known is not None)
    assert known is not None or b"interactionStatus" in probe


@pytest.mark.parametrize(
    "raw",
    [
        b'{"serverContent": {"turnComplete": true, "fieldOfTomorrow": 1}}',
        b'{"serverContent": null}',
        b'{"serverContent": {"modelTurn": null, "turnComplete": true}}',
        b'{"fieldOfTomorrow": {"x": 1}, "serverContent": {"turnComplete": true}}',
        b'{"voiceActivity": {"voiceActivityType": "ACTIVITY_START"}}',
        b"",
        b"not json",
        b'{"serverContent": {"turnComplete": "maybe"}}',
    ],
)
def test_any_other_message_is_read_by_the_sdk_itself(raw: bytes) -> None:
    sdk, ours, decoder = _both_ways(raw)
    _assert_same(sdk, ours)
    assert decoder.decoded == 0


def test_an_empty_message_is_the_sdks_empty_message() -> None:
    sdk, ours, _ = _both_ways(b"{}")
    _assert_same(sdk, ours)


def test_a_close_is_the_sdks_own_error() -> None:
    close = ConnectionClosedError(Close(1011, "quota"), None)
    sdk, ours, _ = _both_ways(close)
    _assert_same(sdk, ours)
    # (google-genai 1.56, the oldest google-adk allows, raises the websockets error itself)
    assert isinstance(ours, errors.APIError | ConnectionClosedError)
    assert not isinstance(ours, errors.APIError) or ours.code == 1011


def test_a_cancelled_read_is_cancelled() -> None:
    decoding = _session(asyncio.CancelledError())
    assert MessageDecoder().install(decoding)

    async def once() -> Any:
        return await decoding._receive()

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(once())


def test_a_vertex_session_is_left_to_the_sdk() -> None:
    assert not MessageDecoder().install(_session(vertex=True))


def test_a_receive_that_is_not_the_sdks_own_is_left_alone() -> None:
    session = _session()
    own = session._receive

    async def traced() -> Any:
        return await own()

    session._receive = traced
    assert not MessageDecoder().install(session)
    assert session._receive is traced


def test_a_google_genai_newer_than_tested_reads_its_own_messages(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(genai_compat, "TESTED_GENAI_NEWEST", "0.1.0")
    assert not MessageDecoder().install(_session())


def test_one_probe_read_otherwise_leaves_every_message_to_the_sdk() -> None:
    async def reads_otherwise(session: Any) -> types.LiveServerMessage:
        await genai_compat.websocket_of(session).recv(decode=False)
        return types.LiveServerMessage(setup_complete=types.LiveServerSetupComplete())

    assert message_decoding.agreed_fields(_session(), reads_otherwise) == frozenset()


# -- random messages ------------------------------------------------------------------------

_TEXT = st.text(max_size=12)
_DATA = st.binary(max_size=40).flatmap(
    lambda data: st.sampled_from(
        [
            base64.b64encode(data).decode(),
            base64.urlsafe_b64encode(data).decode(),
            base64.b64encode(data).decode().rstrip("="),
        ]
    )
)
_PART = st.one_of(
    st.fixed_dictionaries({"text": _TEXT}, optional={"thought": st.booleans()}),
    st.fixed_dictionaries(
        {
            "inlineData": st.fixed_dictionaries(
                {"mimeType": st.sampled_from(["audio/pcm;rate=24000", "audio/pcm"]), "data": _DATA}
            )
        }
    ),
)
_TRANSCRIPTION = st.fixed_dictionaries({"text": _TEXT}, optional={"finished": st.booleans()})
_SERVER_CONTENT = st.fixed_dictionaries(
    {},
    optional={
        "modelTurn": st.fixed_dictionaries(
            {"parts": st.lists(_PART, max_size=3)}, optional={"role": st.just("model")}
        ),
        "turnComplete": st.booleans(),
        "generationComplete": st.booleans(),
        "interrupted": st.booleans(),
        "inputTranscription": _TRANSCRIPTION,
        "outputTranscription": _TRANSCRIPTION,
        "interactionStatus": st.sampled_from(["IN_PROGRESS", "IDLE", "REQUIRES_ACTION"]),
    },
)
_COUNT = st.integers(min_value=0, max_value=2**31 - 1)
_DETAILS = st.lists(
    st.fixed_dictionaries({"modality": st.sampled_from(["TEXT", "AUDIO"]), "tokenCount": _COUNT}),
    max_size=2,
)
_MESSAGE = st.fixed_dictionaries(
    {},
    optional={
        "setupComplete": st.just({}),
        "serverContent": _SERVER_CONTENT,
        "usageMetadata": st.fixed_dictionaries(
            {},
            optional={
                "promptTokenCount": _COUNT,
                "responseTokenCount": _COUNT,
                "totalTokenCount": _COUNT,
                "promptTokensDetails": _DETAILS,
                "responseTokensDetails": _DETAILS,
            },
        ),
        "sessionResumptionUpdate": st.fixed_dictionaries(
            {},
            optional={
                "newHandle": _TEXT,
                "resumable": st.booleans(),
                "lastConsumedClientMessageIndex": st.one_of(_COUNT, _COUNT.map(str)),
            },
        ),
        "toolCall": st.fixed_dictionaries(
            {
                "functionCalls": st.lists(
                    st.fixed_dictionaries(
                        {"name": _TEXT},
                        optional={
                            "id": _TEXT,
                            "args": st.dictionaries(
                                _TEXT, st.one_of(_TEXT, _COUNT, st.booleans(), st.none())
                            ),
                        },
                    ),
                    max_size=2,
                )
            }
        ),
        "toolCallCancellation": st.fixed_dictionaries({"ids": st.lists(_TEXT, max_size=2)}),
        "goAway": st.fixed_dictionaries({}, optional={"timeLeft": st.sampled_from(["9s", "0.5s"])}),
    },
)


def _with_surprises(message: dict[str, Any], draw: Any) -> dict[str, Any]:
    """``message`` with, now and then, a field the SDK does not know or a null, at the top or
    one level down."""
    if draw(st.integers(0, 5)) == 0:
        message["fieldOfTomorrow"] = draw(st.one_of(st.none(), _COUNT))
    for key, value in list(message.items()):
        if isinstance(value, dict) and draw(st.integers(0, 7)) == 0:
            value[draw(st.sampled_from(["turnComplete", "somethingNew"]))] = None
        if draw(st.integers(0, 15)) == 0:
            message[key] = None
    return message


@st.composite
def _messages(draw: Any) -> bytes:
    return json.dumps(_with_surprises(draw(_MESSAGE), draw)).encode()


@given(_messages())
def test_a_random_message_reads_as_the_sdk_reads_it(raw: bytes) -> None:
    sdk, ours, _ = _both_ways(raw)
    _assert_same(sdk, ours)


# -- end to end -----------------------------------------------------------------------------


@pytest.mark.e2e
@pytest.mark.timeout(60)
async def test_a_live_run_reads_its_messages_the_fast_way(make_agent: AgentFactory) -> None:
    stats: list[RunStats] = []
    remove = adk_live_resume.on_run_end(stats.append)
    try:
        async with (
            FakeLiveServer() as server,
            asyncio.timeout(40),
            await LiveDriver.start(make_agent(server)) as live,
        ):
            assert await live.say("hello") == "echo: hello"
            assert await live.say("again") == "echo: again"
            assert await live.close() is None
    finally:
        remove()
    (run,) = stats
    assert run.error is None
    assert run.messages_decoded >= 4  # (two answers and two turn ends at least)
