"""Way in 1: call ``adk_live_resume.install()`` once at startup; every live agent resumes.

Runs a short live conversation through a real ``Runner.run_live`` against the embedded fake
Gemini Live server (TLS websockets on 127.0.0.1, no network, no API key), kills the socket
mid-conversation without a close frame, and shows the same conversation going on. Exits 0 when
it did. For your own app, keep the ``install()`` line and build the agent with a model name
(``model="gemini-3.8-live"``) instead of ``server.gemini()``.

    python examples/monkeypatch_at_startup.py
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import adk_live_resume

adk_live_resume.install()  # once, before any Runner.run_live; every LlmAgent is covered


async def main() -> int:
    from google.adk.agents import LlmAgent
    from google.adk.agents.live_request_queue import LiveRequestQueue
    from google.adk.agents.run_config import RunConfig
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    from adk_live_resume.testing import FakeLiveServer

    print("backend: the embedded fake Gemini Live server on 127.0.0.1 (nothing else is contacted)")
    remove = adk_live_resume.on_reconnect(
        lambda info: print(
            f"  [reconnected: {info.reason}, attempt {info.attempt}, "
            f"state restored: {info.state_restored}, cause: {info.cause}]"
        )
    )
    async with FakeLiveServer() as server:
        agent = LlmAgent(name="assistant", model=server.gemini(), instruction="Be brief.")
        runner = InMemoryRunner(agent=agent, app_name="example")
        session = await runner.session_service.create_session(app_name="example", user_id="me")
        queue = LiveRequestQueue()
        run_config = RunConfig(
            response_modalities=[types.Modality.TEXT],
            session_resumption=types.SessionResumptionConfig(),  # handles to resume with
        )
        answers: asyncio.Queue[str] = asyncio.Queue()

        async def consume() -> None:
            """What an app's websocket handler does: forward every event of the live run."""
            text: list[str] = []
            async for event in runner.run_live(
                user_id="me", session_id=session.id, live_request_queue=queue, run_config=run_config
            ):
                text += _final_text(event)
                if event.turn_complete and text:
                    answers.put_nowait("".join(text))
                    text = []

        consumer = asyncio.create_task(consume())

        async def say(words: str) -> str:
            queue.send_content(types.Content(role="user", parts=[types.Part(text=words)]))
            answer = await asyncio.wait_for(answers.get(), 15)
            print(f"user: {words!r:30} model: {answer!r}")
            return answer

        got = [await say("hello, I am Ada")]
        print("-- the server drops the socket (no close frame, like a network loss) --")
        await server.restart()
        got.append(await say("are you still there?"))
        got.append(await say("what did I say first?"))
        queue.close()
        await asyncio.wait_for(consumer, 10)  # raises if the live run failed
    remove()
    expected = [
        "echo: hello, I am Ada",
        "echo: are you still there?",
        "you first said: hello, I am Ada",
    ]
    if got != expected or len(server.connections) != 2:
        print(f"FAILED: expected {expected}, got {got}")
        return 1
    print("OK: one conversation over 2 connections, nothing lost, nothing repeated")
    return 0


def _final_text(event: Any) -> list[str]:
    """The model's final (non-partial) text in an ADK event."""
    if event.partial or event.author == "user" or event.content is None:
        return []
    return [p.text for p in event.content.parts or [] if p.text and not p.thought]


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
