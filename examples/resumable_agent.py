"""Way in 2: ``ResumableLlmAgent`` for just this agent, no global patch.

Runs a short live conversation through a real ``Runner.run_live`` against the embedded fake
Gemini Live server (TLS websockets on 127.0.0.1, no network, no API key). Mid-conversation the
server closes the socket with 1011 ("Internal error"), which stock google-adk 1.x turns into an
exception; the resumable agent resumes the session and the conversation goes on. Nothing is
patched process-wide: other agents keep ADK's stock behaviour. Exits 0 when it worked.

    python examples/resumable_agent.py
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from adk_live_resume import ResumableLlmAgent, ResumePolicy, is_installed


async def main() -> int:
    from google.adk.agents.live_request_queue import LiveRequestQueue
    from google.adk.agents.run_config import RunConfig
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    from adk_live_resume.testing import FakeLiveServer

    print("backend: the embedded fake Gemini Live server on 127.0.0.1 (nothing else is contacted)")
    async with FakeLiveServer() as server:
        agent = ResumableLlmAgent(
            name="voice_agent",
            model=server.gemini(),  # in your app: "gemini-3.8-live"
            instruction="You are a helpful assistant.",
            resume_policy=ResumePolicy(max_attempts=5),  # optional; defaults are fine
        )
        runner = InMemoryRunner(agent=agent, app_name="example")
        session = await runner.session_service.create_session(app_name="example", user_id="me")
        queue = LiveRequestQueue()
        run_config = RunConfig(
            response_modalities=[types.Modality.TEXT],
            session_resumption=types.SessionResumptionConfig(),
        )
        answers: asyncio.Queue[str] = asyncio.Queue()

        async def consume() -> None:
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
            print(f"user: {words!r:26} model: {answer!r}")
            return answer

        got = [await say("my name is Ada"), await say("I like tea")]
        print("-- the server closes the socket with 1011 (no goAway first) --")
        await server.close_open(1011, "Internal error encountered.")
        got.append(await say("recall"))
        queue.close()
        await asyncio.wait_for(consumer, 10)
        connections = server.connections
    expected = ["echo: my name is Ada", "echo: I like tea", "you said: my name is Ada | I like tea"]
    print(f"connections: {len(connections)}, second one resumed: {connections[-1].resumed}")
    print(f"global patch installed: {is_installed()} (only this agent resumes)")
    if got != expected or len(connections) != 2 or not connections[1].resumed or is_installed():
        print(f"FAILED: expected {expected}, got {got}")
        return 1
    print("OK: the resumable agent carried the conversation across the 1011 close")
    return 0


def _final_text(event: Any) -> list[str]:
    """The model's final (non-partial) text in an ADK event."""
    if event.partial or event.author == "user" or event.content is None:
        return []
    return [p.text for p in event.content.parts or [] if p.text and not p.thought]


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
