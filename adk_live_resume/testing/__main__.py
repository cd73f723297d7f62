"""``python -m adk_live_resume.testing``: a tour of the fake server, or ``serve`` to keep one.

``python -m adk_live_resume.testing serve [--port P] [--vertex]`` keeps a fake running and
prints its environment as ``export`` lines (:mod:`~adk_live_resume.testing.serve`). Without a
command, the tour: it starts a fake server whose 600 s connections last 3 real seconds
(``time_scale=0.005``), talks to it with the bare google-genai SDK, and prints what happened:
a text turn, the resumption handle, the ``goAway``, the deadline close (code 1008), and a
resumed session that still remembers the conversation. Exits 0 when everything happened as
documented, 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from typing import Any

from .records import short_handle
from .serve import add_arguments, serve
from .server import FakeLiveServer

_START = time.monotonic()


def _say(line: str) -> None:
    print(f"[{time.monotonic() - _START:6.2f}s] {line}", flush=True)


async def _turn(session: Any) -> tuple[str, str | None]:
    """Send nothing; read one model turn, then the handle that follows it."""
    text = ""
    handle: str | None = None
    while handle is None:
        async for message in session.receive():
            if message.server_content and message.server_content.model_turn:
                text += message.text or ""
            update = message.session_resumption_update
            if update is not None:
                if update.new_handle:
                    handle = update.new_handle
                    break
                _say("  <- sessionResumptionUpdate resumable=false (generating)")
    return text, handle


async def _demo() -> bool:
    from google.genai import errors, types

    ok = True
    async with FakeLiveServer(time_scale=0.005, chunk_delay=0.05) as server:
        _say(f"fake server on {server.url}, cert {server.cert_path}")
        _say("connection lifetime 600 service s = 3.0 real s; goAway 60 service s before")
        client = server.genai_client()

        def config(handle: str | None) -> types.LiveConnectConfig:
            return types.LiveConnectConfig(
                response_modalities=[types.Modality.TEXT],
                session_resumption=types.SessionResumptionConfig(handle=handle),
            )

        async with client.aio.live.connect(model="gemini-live-fake", config=config(None)) as s:
            _say("connected (setupComplete received)")
            for text in ("hello fake server", "how many turns?"):
                _say(f"  -> user: {text!r}")
                await s.send_client_content(
                    turns=types.Content(role="user", parts=[types.Part(text=text)])
                )
                answer, handle = await _turn(s)
                _say(f"  <- model: {answer!r}; new handle {short_handle(handle)}")
            _say("  .. waiting for the connection to reach its deadline")
            try:
                while True:
                    async for message in s.receive():
                        if message.go_away:
                            _say(f"  <- goAway timeLeft={message.go_away.time_left}")
            except errors.APIError as exc:
                _say(f"  xx receive raised {type(exc).__name__} code={exc.code}: {exc}")
                ok = ok and exc.code == 1008

        _say(f"reconnecting with handle {short_handle(handle)}")
        async with client.aio.live.connect(model="gemini-live-fake", config=config(handle)) as s:
            await s.send_client_content(
                turns=types.Content(role="user", parts=[types.Part(text="recall")])
            )
            answer, _ = await _turn(s)
            _say(f"  <- model: {answer!r}")
            ok = ok and answer == "you said: hello fake server | how many turns?"

        await server.wait_for_connections(2, finished=True)
        for record in server.connections:
            _say(
                f"connection {record.index}: resumed={record.resumed} "
                f"go_away_sent={record.go_away_sent} ended_by={record.ended_by} "
                f"close_code={record.close_code} user_turns={record.user_turns}"
            )
        _say(f"user turns answered: {server.user_turns_answered()}")
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m adk_live_resume.testing",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="In your tests use the fake_live_server fixture or FakeLiveServer directly "
        "(see docs/testing.md).",
    )
    commands = parser.add_subparsers(
        dest="command", metavar="{demo,serve,proxy}", title="commands (default: the tour)"
    )
    commands.add_parser("demo", help="the tour (the default)")
    serve_parser = commands.add_parser(
        "serve", help="keep a fake running and print its environment as export lines"
    )
    add_arguments(serve_parser)
    from .proxy_cli import add_proxy_command

    add_proxy_command(commands)
    args = parser.parse_args(argv)
    if args.command == "serve":
        if not 0 <= args.port <= 65535:
            parser.error(f"--port must be 0 (any free port) or 1-65535, not {args.port}")
        if args.time_scale <= 0:
            parser.error(f"--time-scale must be > 0, not {args.time_scale}")
        return asyncio.run(serve(port=args.port, vertex=args.vertex, time_scale=args.time_scale))
    if hasattr(args, "run"):  # a subcommand that says how it runs (proxy)
        return int(args.run(args))
    ok = asyncio.run(_demo())
    _say("demo OK" if ok else "demo FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
