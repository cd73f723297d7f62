"""The session tap over a real google-genai session and TLS websocket to the fake server."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from google.genai import types

from adk_live_resume.compat import genai_compat
from adk_live_resume.compat.tap import SessionTap
from adk_live_resume.testing import FakeLiveServer

pytestmark = pytest.mark.timeout(30)


class HeldResultListener:
    """A listener holding one send that falls due once the first message has been read."""

    def __init__(self) -> None:
        self.read: list[types.LiveServerMessage] = []
        self.held = [
            (
                "send_client_content",
                {
                    "turns": types.Content(role="user", parts=[types.Part(text="job returned")]),
                    "turn_complete": True,
                },
            )
        ]
        self.due_calls = 0
        self.receive_errors: list[BaseException] = []

    def on_server_message(self, message: types.LiveServerMessage) -> None:
        self.read.append(message)

    def input_transcription(self, text: str) -> str:
        return text

    def on_go_away(self, time_left: float | None) -> None:
        pass

    def on_resumption_update(
        self, new_handle: str | None, resumable: bool | None, last_consumed_index: int | None
    ) -> None:
        pass

    async def on_tool_calls(self, calls: list[types.FunctionCall]) -> list[types.FunctionCall]:
        return calls

    def before_send(
        self, method: str, kwargs: dict[str, Any], *, replay: bool
    ) -> tuple[str, dict[str, Any]] | None:
        return method, kwargs

    def due_sends(self) -> list[tuple[str, dict[str, Any]]]:
        self.due_calls += 1
        due, self.held = self.held, []
        return due

    def on_receive_error(self, error: BaseException) -> None:
        self.receive_errors.append(error)

    def on_client_close(self) -> None:
        pass


async def test_a_held_send_failing_on_a_lost_socket_does_not_cut_the_reading_short() -> None:
    """The server answered a turn and closed; the client has not read the answer yet. A held
    send falls due on the first message read and fails (the socket is gone): the reading still
    goes on through every message the socket delivered, the turn's end among them, and only
    then reports the loss."""
    async with FakeLiveServer() as server:
        config = types.LiveConnectConfig(
            response_modalities=[types.Modality.TEXT],
            session_resumption=types.SessionResumptionConfig(),
        )
        async with server.genai_client().aio.live.connect(
            model="gemini-live-fake", config=config
        ) as session:
            await session.send_client_content(
                turns=types.Content(role="user", parts=[types.Part(text="alpha")]),
                turn_complete=True,
            )
            await server.wait_for(lambda: "alpha" in server.user_turns_answered(), 10)
            await server.close_open(1011)
            await asyncio.wait_for(genai_compat.websocket_of(session).wait_closed(), 10)

            listener = HeldResultListener()
            tap = SessionTap(session, listener)
            passed: list[types.LiveServerMessage] = []
            with pytest.raises(Exception) as ended:
                while True:  # (google-genai's receive stops at each turn's end)
                    async for message in tap.receive():
                        passed.append(message)

    assert listener.due_calls >= 1
    assert any(m.server_content and m.server_content.turn_complete for m in passed), [
        m.model_dump(exclude_none=True) for m in passed
    ]
    assert "echo: alpha" in "".join(m.text or "" for m in passed)
    assert listener.receive_errors == [ended.value]
