"""Small builders the test files share: client sends, contents, tools, a goAway server, answers.

Fixtures live in ``conftest.py``; plain functions here, imported by name
(``from .helpers import content``), so that each idea has one definition.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from google import genai
from google.genai import live, types

from adk_live_resume.testing import FakeLiveServer
from adk_live_resume.testing.driver import LiveDriver, answer_text
from adk_live_resume.testing.generation import WORKING

from .conftest import non_blocking

#: The sample rate of the microphone audio the tests send (16-bit mono PCM).
RATE = 16000


def audio_input(pcm: bytes, rate: int = RATE) -> dict[str, object]:
    """The keyword arguments of a ``send_realtime_input`` call carrying ``pcm``."""
    return {"audio": types.Blob(data=pcm, mime_type=f"audio/pcm;rate={rate}")}


def silent_audio_input(ms: int, rate: int = RATE) -> dict[str, object]:
    """:func:`audio_input` with ``ms`` of digital silence."""
    return audio_input(b"\0\0" * (rate * ms // 1000), rate)


def content(role: str, text: str) -> types.Content:
    """A one-part text ``Content`` of ``role`` ("user" or "model")."""
    return types.Content(role=role, parts=[types.Part(text=text)])


def typed_turn(text: str) -> dict[str, object]:
    """The keyword arguments of a ``send_client_content`` call: one user turn, complete."""
    return {"turns": [content("user", text)], "turn_complete": True}


def tool_response(call_id: str, name: str = "f") -> dict[str, object]:
    """The keyword arguments of a ``send_tool_response`` call answering ``call_id``."""
    return {"function_responses": [types.FunctionResponse(id=call_id, name=name, response={})]}


def get_weather(city: str) -> dict[str, Any]:
    """Return the weather in a city."""
    return {"city": city, "sky": "clear"}


def go_away_server(
    *, lifetime: float = 100, lead: float = 60, chunk_delay: float = 0.0, **settings: Any
) -> FakeLiveServer:
    """A fake whose connections live ``lifetime`` service seconds at ``time_scale=0.01`` (1 s
    real for 100) and send goAway ``lead`` service seconds before their end."""
    return FakeLiveServer(
        time_scale=0.01,
        connection_lifetime=lifetime,
        go_away_lead=lead,
        chunk_delay=chunk_delay,
        **settings,
    )


def balance_tool() -> tuple[Callable[[], dict[str, int]], list[int]]:
    """A ``get_balance`` tool that answers 100, then 40, and the list of what it returned: a
    tool run twice for the same (empty) arguments answers differently each time."""
    balances = iter([{"balance": 100}, {"balance": 40}])
    ran: list[int] = []

    def get_balance() -> dict[str, int]:
        """Return the account balance."""
        result = next(balances)
        ran.append(result["balance"])
        return result

    return get_balance, ran


class SlowTool:
    """A tool's work that takes a while, counting its runs: each run waits ``seconds``, then,
    for a ``gated`` tool, until the test opens its ``gate``. ``started`` is set when a run
    begins, ``ended`` when one ends."""

    def __init__(self, seconds: float = 0.0, *, gated: bool = False) -> None:
        self.seconds = seconds
        self.runs: list[str] = []
        self.started = asyncio.Event()
        self.ended = asyncio.Event()
        self.gate = asyncio.Event()
        if not gated:
            self.gate.set()

    async def run(self, name: str) -> int:
        """Do the work for ``name``; return how many runs there were (1 for the first)."""
        self.runs.append(name)
        self.started.set()
        await asyncio.sleep(self.seconds)
        await self.gate.wait()
        self.ended.set()
        return len(self.runs)


def _run_as(kind: str, function: Callable[..., Any]) -> Any:
    """``function`` as ADK runs it: NON_BLOCKING in the background ("background") or in its
    receive step ("receive-step")."""
    return non_blocking(function) if kind == "background" else function


def slow_job_tool(job: SlowTool, kind: str = "background") -> Any:
    """``job`` as the tool ``slow_job(job_name)``, which answers ``{"job": job_name, "run":
    n}``, run as ``kind`` says (:func:`_run_as`)."""

    async def slow_job(job_name: str) -> dict[str, Any]:
        """Run a slow job (sends an email, places an order...)."""
        return {"job": job_name, "run": await job.run(job_name)}

    return _run_as(kind, slow_job)


def slow_lookup_tool(lookup: SlowTool, kind: str) -> Any:
    """``lookup`` as the tool ``slow_lookup(item)``, which answers ``{"item": item, "found":
    "yes"}``, run as ``kind`` says (:func:`_run_as`)."""

    async def slow_lookup(item: str) -> dict[str, str]:
        """Look an item up (takes a while)."""
        await lookup.run(item)
        return {"item": item, "found": "yes"}

    return _run_as(kind, slow_lookup)


async def end_once_away(server: FakeLiveServer, tool: SlowTool, kind: str) -> None:
    """Open a gated tool's gate once the session has left its connection: when the next
    connection is up, for a tool ADK runs in the background; a second later for one it runs
    in its receive step (ADK reads on, and the next connection is set up, only once such a
    tool ended: the tool ends well after the connection did)."""
    if kind == "background":
        await server.wait_for_connections(2)
    else:
        await asyncio.sleep(1.0)
    tool.gate.set()


def answers(live: LiveDriver, mark: int) -> list[str]:
    """The texts of the completed turns with text after event ``mark``."""
    texts: list[str] = []
    start = mark
    for index in range(mark, len(live.events)):
        event = live.events[index]
        if getattr(event, "interrupted", False):
            start = index + 1
        if getattr(event, "turn_complete", False):
            text = answer_text(live.events[start : index + 1])
            start = index + 1
            if text:
                texts.append(text)
    return texts


async def answer_like(live: LiveDriver, mark: int, prefix: str, timeout: float = 10) -> str:
    """The first completed answer after event ``mark`` that starts with ``prefix``, once one
    came (within ``timeout`` seconds)."""
    async with asyncio.timeout(timeout):
        while True:
            found = [text for text in answers(live, mark) if text.startswith(prefix)]
            if found:
                return found[0]
            await asyncio.sleep(0.02)


async def told_once(
    live: LiveDriver, mark: int, result: str, *, timeout: float = 10, quiet: float = 0.3
) -> None:
    """A tool's result, ``result`` ("<tool> returned <result>"), is told after event ``mark``
    (within ``timeout`` seconds), and once: no other telling of the tool's result arrives
    within ``quiet`` seconds more."""
    prefix = result.partition(" returned ")[0] + " returned"
    assert await answer_like(live, mark, prefix, timeout=timeout) == result
    await asyncio.sleep(quiet)  # nothing more may arrive
    told = [a for a in answers(live, mark) if a.startswith(prefix)]
    assert told == [result], "told once"


def late_results_told(record: Any) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """``(tool name, arguments, result)`` of each tool result a connection got as content
    (a model turn naming the call, a user turn carrying its response), in order."""
    from adk_live_resume.testing.protocol import pick, pick_dict, pick_list

    told: list[tuple[str, dict[str, Any], dict[str, Any]]] = []
    for message in record.client_messages:
        body = pick_dict(message, "clientContent") or {}
        calls: dict[str, tuple[str, dict[str, Any]]] = {}
        for turn in pick_list(body, "turns"):
            for part in pick_list(turn, "parts"):
                call = pick_dict(part, "functionCall")
                if call is not None:
                    calls[str(pick(call, "id"))] = (str(pick(call, "name")), pick(call, "args"))
                response = pick_dict(part, "functionResponse")
                if response is not None and str(pick(response, "id")) in calls:
                    name, args = calls[str(pick(response, "id"))]
                    told.append((name, args or {}, pick(response, "response") or {}))
    return told


def working_utterance(text: str) -> bool:
    """The first utterance of a request to a model that works in the background (the
    answer comes after the work)."""
    return text.startswith(WORKING)


def times_said(live: LiveDriver, text: str) -> int:
    """How many completed model turns the client was shown with exactly ``text``."""
    count, start = 0, 0
    for index, event in enumerate(live.events):
        if getattr(event, "interrupted", False):
            start = index + 1
        if getattr(event, "turn_complete", False):
            count += answer_text(live.events[start : index + 1]) == text
            start = index + 1
    return count


def genai_session(*, vertex: bool, websocket: Any = None) -> Any:
    """A real google-genai ``AsyncSession`` of either dialect on ``websocket`` (no I/O: for
    the SDK's own encoding and reading, run against a stand-in)."""
    client = genai.Client(vertexai=True, api_key="k") if vertex else genai.Client(api_key="k")
    return live.AsyncSession(api_client=client._api_client, websocket=websocket)
