"""``python -m adk_live_resume.testing proxy --upstream URL``: the fault proxy as a command.

It prints the environment variables that point an app at it, then reads one command per line
on stdin and injects it (``help`` lists them) until stdin ends or Ctrl-C::

    goaway 5          a goAway with timeLeft 5s, then the close 1008 at the deadline
    close 1011 boom   a close with a code (and a reason)
    abort             a drop without a close frame
    latency 0.2       one-way latency, both ways, from now on
    hold-pongs / release-pongs, hold-handles / release-handles
    refuse-resume 1   refuse the next N setups that carry a handle (close 1008)
    status            the connections so far

Commands act on every open connection. ``--inject SPEC`` adds a schedule
(:mod:`..fault_proxy.inject_spec`); ``--record FILE`` writes every frame both ways to FILE
(:mod:`.recording`: handles, keys and audio redacted).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from collections.abc import Callable
from typing import Any

from ..fault_proxy.inject_spec import SPEC_FORM, InjectSpecError, parse_inject_spec
from ..fault_proxy.proxy import FaultProxy

__all__ = ["CommandError", "add_proxy_command", "parse_command"]

Action = Callable[[FaultProxy], str]


class CommandError(ValueError):
    """A stdin command that cannot be read; the message lists the accepted ones."""


_HELP = (
    "commands: goaway SECONDS | close CODE [REASON] | abort | latency SECONDS | hold-pongs | "
    "release-pongs | hold-handles | release-handles | refuse-resume [N] | status | help"
)


def _number(word: str, what: str) -> float:
    try:
        value = float(word)
    except ValueError:
        raise CommandError(f"{what} must be a number, got {word!r}; {_HELP}") from None
    if not value >= 0:
        raise CommandError(f"{what} must be >= 0, got {word!r}")
    return value


def _status(proxy: FaultProxy) -> str:
    lines = [
        f"#{c.index} {c.path} resumed={c.resumed} up={c.messages_up} down={c.messages_down} "
        f"faults={c.faults} ended_by={c.ended_by} code={c.close_code}"
        for c in proxy.connections
    ]
    return "\n".join(lines) or "no connections yet"


def _switch(method: Callable[[FaultProxy], None], said: str) -> Action:
    def act(proxy: FaultProxy) -> str:
        method(proxy)
        return said

    return act


def parse_command(line: str) -> Action | None:
    """The action for one stdin line (None for a blank one); :class:`CommandError` if bad."""
    words = line.split()
    if not words:
        return None
    name, args = words[0].lower(), words[1:]
    if name == "goaway" and len(args) == 1:
        seconds = _number(args[0], "goaway's time left")
        return lambda proxy: f"goAway sent to {proxy.go_away(seconds)}"
    if name == "close" and args:
        try:
            code = int(args[0])
        except ValueError:
            raise CommandError(f"close needs a code such as 1011, got {args[0]!r}") from None
        if not 1000 <= code <= 4999:
            raise CommandError(f"close code {code} is not 1000-4999")
        reason = " ".join(args[1:])
        return lambda proxy: f"closed {proxy.close(code, reason)} with {code}"
    if name == "abort" and not args:
        return lambda proxy: f"aborted {proxy.abort()}"
    if name == "latency" and len(args) == 1:
        seconds = _number(args[0], "latency")

        def set_latency(proxy: FaultProxy) -> str:
            proxy.latency = seconds
            return f"latency {seconds:g}s each way"

        return set_latency
    if name == "refuse-resume" and len(args) <= 1:
        count = int(_number(args[0], "refuse-resume's count")) if args else 1

        def refuse(proxy: FaultProxy) -> str:
            proxy.refuse_resumes(count)
            return f"the next {count} resume(s) will be refused"

        return refuse
    switches: dict[str, Action] = {
        "hold-pongs": _switch(FaultProxy.hold_pongs, "pongs held"),
        "release-pongs": _switch(FaultProxy.release_pongs, "pongs released"),
        "hold-handles": _switch(lambda proxy: proxy.hold_handles(True), "handles held"),
        "release-handles": _switch(lambda proxy: proxy.hold_handles(False), "handles pass"),
        "status": _status,
        "help": lambda proxy: _HELP,
    }
    if name in switches and not args:
        return switches[name]
    raise CommandError(f"cannot read {line.strip()!r}; {_HELP}")


def add_proxy_command(commands: Any) -> None:
    """Add the ``proxy`` subcommand to an argparse subparsers object."""
    parser = commands.add_parser(
        "proxy",
        help="a fault proxy in front of a Live endpoint (the real service or a fake)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--upstream",
        required=True,
        metavar="URL",
        help="the endpoint to relay to, e.g. https://generativelanguage.googleapis.com",
    )
    parser.add_argument(
        "--upstream-cert",
        metavar="PEM",
        help="CA bundle to trust for the upstream (default: the system's)",
    )
    parser.add_argument("--inject", metavar="SPEC", help=f"faults on a schedule: {SPEC_FORM}")
    parser.add_argument(
        "--vertex", action="store_true", help="print the Vertex AI variables (default: Gemini API)"
    )
    parser.add_argument(
        "--record",
        metavar="FILE",
        help="write every frame both ways to FILE as JSON lines (handles, keys, audio redacted)",
    )
    parser.set_defaults(run=run_proxy)


def run_proxy(options: argparse.Namespace) -> int:
    """Run the proxy until stdin ends or Ctrl-C; 2 on a bad ``--inject`` or ``--upstream``."""
    try:
        schedule = parse_inject_spec(options.inject) if options.inject else None
        proxy = FaultProxy(
            options.upstream,
            upstream_cert=options.upstream_cert,
            schedule=schedule,
            record=options.record,
        )
    except (InjectSpecError, ValueError) as error:
        print(f"proxy: {error}", file=sys.stderr)
        return 2
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(proxy, vertex=options.vertex))
    return 0


async def _serve(proxy: FaultProxy, *, vertex: bool) -> None:
    async with proxy:
        variable = "GOOGLE_VERTEX_BASE_URL" if vertex else "GOOGLE_GEMINI_BASE_URL"
        print(f"fault proxy on {proxy.base_url} -> {proxy.upstream_url}", flush=True)
        print(f"export {variable}={proxy.base_url}", flush=True)
        print(f"export SSL_CERT_FILE={proxy.ca_bundle()}", flush=True)
        print(f"schedule: {proxy.schedule.describe()}; {_HELP}", flush=True)
        loop = asyncio.get_running_loop()
        while True:
            line = await loop.run_in_executor(None, sys.stdin.readline)
            if not line:
                return
            try:
                action = parse_command(line)
            except CommandError as error:
                print(f"proxy: {error}", flush=True)
                continue
            if action is not None:
                print(action(proxy), flush=True)
