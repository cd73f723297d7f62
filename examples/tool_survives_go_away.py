"""An agent with a tool keeps working when the server's goAway lands during a tool call.

Runs against the embedded fake Gemini Live server (TLS websockets on 127.0.0.1, no network,
no API key) on a time scale: a connection lives 180 s and ``goAway`` comes 60 s before its
deadline, with 1 server second = 20 ms, so the goAway arrives about 2.4 s in. The user asks
for the weather; the tool is slow, and (to make the timing certain) it returns only once the
server has sent goAway. ``adk_live_resume`` lets the tool call finish on the old connection,
waits for the answer and a fresh resumption handle (a safe point), then moves the session to a
new connection before the deadline; the conversation goes on there. Exits 0 when it did.

    python examples/tool_survives_go_away.py
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import adk_live_resume
from adk_live_resume import ReconnectInfo, ResumePolicy

TIME_SCALE = 0.02  # real seconds per server second


async def main() -> int:
    from google.adk.agents import LlmAgent
    from google.adk.agents.live_request_queue import LiveRequestQueue
    from google.adk.agents.run_config import RunConfig
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    from adk_live_resume.testing import FakeLiveServer

    # goAway says "timeLeft: 1.2s" (60 server s); reconnect at the latest 0.2 s before that.
    adk_live_resume.install(ResumePolicy(go_away_margin=0.2))
    reconnects: list[ReconnectInfo] = []
    remove = adk_live_resume.on_reconnect(reconnects.append)
    server = FakeLiveServer(time_scale=TIME_SCALE, connection_lifetime=180, go_away_lead=60)
    print(
        "backend: the embedded fake Gemini Live server on 127.0.0.1 (nothing else is "
        f"contacted); time scale {TIME_SCALE}: 180 s connections, goAway 60 s before the end"
    )
    async with server:

        async def get_weather(city: str) -> dict[str, str]:
            """Return the current weather for a city."""
            print(f"  tool get_weather({city!r}) started; waiting for the server's goAway...")
            await server.wait_for(lambda: server.connections[0].go_away_sent, timeout=30)
            print("  goAway arrived while the tool was running; the tool returns now")
            return {"city": city, "sky": "clear", "temperature_c": "21"}

        agent = LlmAgent(
            name="assistant",
            model=server.gemini(),  # in your app: "gemini-3.8-live"
            instruction="Use get_weather for weather questions.",
            tools=[get_weather],
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
            answer = await asyncio.wait_for(answers.get(), 30)
            print(f"user: {words!r}\n  model: {answer!r} (connection {len(server.connections)})")
            return answer

        first = await say("hello, I am Ada")
        weather = await say('call get_weather {"city": "Paris"}')
        await server.wait_for_connections(2, timeout=10)
        memory = await say("what did I say first?")
        queue.close()
        await asyncio.wait_for(consumer, 10)
        old = server.connections[0]
    remove()
    adk_live_resume.uninstall()
    for info in reconnects:
        print(f"reconnect: {info.reason}, gap {info.gap_ms:.0f} ms, restored {info.state_restored}")
    print(f"old connection: goAway sent {old.go_away_sent}, closed by the {old.ended_by}")
    ok = (
        first == "echo: hello, I am Ada"
        and weather.startswith("get_weather returned")
        and "Paris" in weather
        and memory == "you first said: hello, I am Ada"
        and [r.reason for r in reconnects] == ["go_away"]
        and reconnects[0].state_restored
        and old.ended_by == "client"  # moved before the server's deadline close
        and not old.stale_tool_response_ids
        and not old.unknown_tool_response_ids
    )
    print(
        "OK: the tool call finished, then the session moved to a new connection" if ok else "FAILED"
    )
    return 0 if ok else 1


def _final_text(event: Any) -> list[str]:
    """The model's final (non-partial) text in an ADK event."""
    if event.partial or event.author == "user" or event.content is None:
        return []
    return [p.text for p in event.content.parts or [] if p.text and not p.thought]


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
