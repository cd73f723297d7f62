"""Gap marks: where a resume's gap goes, the patched loop against the detecting floor.

``resume_gap`` measures each gap from end to end; this benchmark splits it. For a drop
without a close frame (``abort``) and one with a close frame (``close 1000``), samples of the
patched run and of the bare detecting floor alternate (``resume_gap``'s own samples, the
floor with the agent's setup), and each is timed at the same marks, on the event loop clock
the in-process fake shares, from the gap's start (the fake's ``ended_at``). A mark is the
first time after the start that its function is called (or raises):

* ``socket lost``: websockets' ``connection_lost`` (the TCP connection is gone);
* ``websockets recv raised`` and ``google-genai receive raised`` (its ``_receive``): the fault
  reaches the SDK's reader;
* ``loop connects``: the patched loop's ``Connector.connect`` (its attempt begins, after the
  pacer; the patched run only);
* ``ADK Gemini.connect``: ADK's connect (the patched run only);
* ``google-genai live.connect`` and ``websockets.connect``: google-genai builds the setup, then
  opens the socket (with a close frame, the patched loop's early dial opens it first);
* ``handshakes done`` and ``setupComplete``: the fake's ``accepted_at`` and ``first_sent_at``
  for the next connection.

The marks wrap library functions for this process only (the originals are put back at the
end). Medians in ms, and patched less floor per mark. Nothing is asserted but that every
sample resumed.

    python3 scripts/dev.py bench gap_marks            # 100 samples per style and client
    python3 scripts/dev.py bench gap_marks --quick    # 5
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import statistics
from collections.abc import Callable, Iterator
from typing import Any

import resume_gap
from common import check, machine, markdown_table, output_dirs, parser, wrapped, write_result

STYLES = ("abort", "close_1000")
CLIENTS = ("patched", "floor_detect")
FULL_SAMPLES = 100
QUICK_SAMPLES = 5
MARKS = (
    "socket lost",
    "websockets recv raised",
    "google-genai receive raised",
    "loop connects",
    "ADK Gemini.connect",
    "google-genai live.connect",
    "websockets.connect",
    "handshakes done",
    "setupComplete",
)

_seen: list[tuple[str, float]] = []


def _mark(name: str) -> None:
    _seen.append((name, asyncio.get_running_loop().time()))


def _calls(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    def marked(*args: Any, **kwargs: Any) -> Any:
        _mark(name)
        return function(*args, **kwargs)

    return marked


def _raises(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    async def marked(*args: Any, **kwargs: Any) -> Any:
        try:
            return await function(*args, **kwargs)
        except BaseException:
            _mark(name)
            raise

    return marked


def _entered(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    async def marked(*args: Any, **kwargs: Any) -> Any:
        _mark(name)
        return await function(*args, **kwargs)

    return marked


@contextlib.contextmanager
def marks_on() -> Iterator[None]:
    """Wrap the marked functions for the block; put the originals back after it."""
    import google.genai.live as genai_live
    import websockets.asyncio.connection as ws_connection
    from google.adk.models.google_llm import Gemini

    import adk_live_resume.shell.connector as connector

    marks = [
        (ws_connection.Connection, "connection_lost", _calls, "socket lost"),
        (ws_connection.Connection, "recv", _raises, "websockets recv raised"),
        (genai_live.AsyncSession, "_receive", _raises, "google-genai receive raised"),
        (connector.Connector, "connect", _entered, "loop connects"),
        (Gemini, "connect", _calls, "ADK Gemini.connect"),
        (genai_live.AsyncLive, "connect", _calls, "google-genai live.connect"),
        (genai_live, "ws_connect", _calls, "websockets.connect"),
    ]
    with wrapped(
        *(
            (owner, attribute, functools.partial(wrap, name))
            for owner, attribute, wrap, name in marks
        )
    ):
        yield


async def _sample(server: Any, client: Any, setup: Any, style: str, which: str) -> dict[str, float]:
    """One sample of ``which`` through ``style``: its marks, in ms from the gap's start."""
    await resume_gap._settle(server)
    first = len(server.connections)
    _seen.clear()
    if which == "patched":
        outcome = await resume_gap._client_sample(server, server, style, which)
    else:
        outcome = await resume_gap._detecting_floor_sample(server, client, style, setup)
    check(outcome.gap is not None, f"{which} {style}: no resume: {outcome}")
    old, new = server.connections[first], server.connections[first + 1]
    start, accepted, first_sent = old.ended_at, new.accepted_at, new.first_sent_at
    assert start is not None and accepted is not None and first_sent is not None
    row: dict[str, float] = {}
    for name, at in _seen:
        if at >= start and name not in row:
            row[name] = 1000 * (at - start)
    row["handshakes done"] = 1000 * (accepted - start)
    row["setupComplete"] = 1000 * (first_sent - start)
    return row


async def measure(samples: int) -> dict[str, dict[str, list[dict[str, float]]]]:
    """``samples`` rounds of every style and client, interleaved."""
    from adk_live_resume.testing import FakeLiveServer

    found: dict[str, dict[str, list[dict[str, float]]]] = {
        style: {client: [] for client in CLIENTS} for style in STYLES
    }
    server = FakeLiveServer(chunk_delay=resume_gap.CHUNK_DELAY)
    async with server:
        client = server.genai_client()
        setup = await resume_gap.agent_setup(server, server)
        with marks_on():
            for _ in range(samples):
                for style in STYLES:
                    for which in CLIENTS:
                        row = await _sample(server, client, setup, style, which)
                        found[style][which].append(row)
    return found


def medians(rows: list[dict[str, float]]) -> dict[str, float]:
    return {
        mark: statistics.median(values)
        for mark in MARKS
        if (values := [row[mark] for row in rows if mark in row])
    }


def main() -> None:
    options = parser(__doc__ or "")
    options.add_argument(
        "--samples", type=int, help=f"samples per style and client (default {FULL_SAMPLES})"
    )
    args = options.parse_args()
    samples = args.samples or (QUICK_SAMPLES if args.quick else FULL_SAMPLES)
    results_dir, _ = output_dirs(args.quick)
    found = asyncio.run(measure(samples))
    summary: dict[str, Any] = {}
    for style in STYLES:
        patched, floor = (medians(found[style][c]) for c in CLIENTS)
        summary[style] = {"patched": patched, "floor_detect": floor}
        rows = [
            [
                mark,
                round(patched[mark], 3) if mark in patched else "-",
                round(floor[mark], 3) if mark in floor else "-",
                round(patched[mark] - floor[mark], 3) if mark in patched and mark in floor else "-",
            ]
            for mark in sorted(
                set(patched) | set(floor), key=lambda m: patched.get(m, floor.get(m, 0.0))
            )
        ]
        print(f"\n## {resume_gap.LABELS[style]}: median ms from the gap's start ({samples} each)\n")
        print(markdown_table(["mark", "patched", "floor (detecting)", "patched - floor"], rows))
    print(f"\nMachine: {machine()}")
    write_result(results_dir, "gap_marks", {"samples": samples, "medians": summary})
    for style in STYLES:
        for which in CLIENTS:
            check(
                "setupComplete" in summary[style][which],
                f"{which} {style}: no setupComplete mark",
            )


if __name__ == "__main__":
    main()
