"""The ``--inject SPEC`` schedule of faults: its parsing and its meaning, without sockets.

``SPEC`` is a comma-separated list of ``key=value`` pairs, values in seconds unless said::

    goaway-every=60,drop-every=90

Keys (each at most once; at least one):

* ``goaway-every=S``: S seconds after a connection opened, and every S seconds after that
  while it lasts, the proxy sends it a ``goAway`` whose ``timeLeft`` is ``goaway-time-left``
  and closes it at that deadline with ``goaway-close-code``, as the service does.
* ``goaway-time-left=S``: the ``timeLeft`` of those goAways (default 10).
* ``goaway-close-code=N``: the code of the close at a goAway's deadline: 1008 (the default,
  with the recorded reason :data:`GO_AWAY_DEADLINE_REASON`, as a recorded real run
  closes: ``gemini-live-protocol.md``, "Field facts that contradict or extend the above") or
  1011 (with "Deadline expired ...", the close seen at the connection cap).
* ``drop-every=S``: S seconds after a connection opened, the proxy aborts it without a close
  frame (a network drop).
* ``close-every=S``: S seconds after a connection opened, the proxy closes it with
  ``close-code`` (default 1011).
* ``close-code=N``: the code of those closes (1000-4999).
* ``latency=S``: one-way latency added to every message, both ways.
* ``refuse-resume=N``: refuse (close 1008) the first N setups that carry a resumption handle.
* ``stall-after=S``: S seconds after a connection opened, it stalls from the next user turn
  on (the socket open, pings answered, the answers withheld or emptied:
  :mod:`~adk_live_resume.fault_proxy.stall_filter`).
* ``stall-shape=SHAPE``: ``silent`` (default), ``empty``, ``rejected`` or ``quiet_audio``.
* ``stall-session=1``: the stall lasts for the live session: a connection resuming it stalls
  from its setup on (0, the default: for the connection only).

Every connection (each resume is a new one) gets its own timers, counted from its opening.
"""

from __future__ import annotations

from dataclasses import dataclass

from .stall_filter import STALL_SHAPES

__all__ = [
    "DEFAULT_DEADLINE_REASON",
    "GO_AWAY_CLOSE_CODES",
    "GO_AWAY_DEADLINE_REASON",
    "SPEC_FORM",
    "InjectSchedule",
    "InjectSpecError",
    "parse_inject_spec",
]

SPEC_FORM = (
    "KEY=VALUE[,KEY=VALUE...] with keys goaway-every, goaway-time-left, drop-every, "
    "close-every, close-code, latency, stall-after (seconds), refuse-resume (a count), "
    "goaway-close-code (1008 or 1011), stall-shape (silent, empty, rejected or quiet_audio) "
    "and stall-session (0 or 1), e.g. "
    "goaway-every=60,drop-every=90"
)


class InjectSpecError(ValueError):
    """An ``--inject`` SPEC that cannot be read; the message says the accepted form."""


@dataclass(frozen=True)
class InjectSchedule:
    """Faults to inject on every relayed connection; None: not that fault."""

    goaway_every: float | None = None
    goaway_time_left: float = 10.0
    #: The close at a goAway's deadline: 1008 (as recorded from the service) or 1011.
    goaway_close_code: int = 1008
    drop_every: float | None = None
    close_every: float | None = None
    close_code: int = 1011
    latency: float = 0.0
    refuse_resume: int = 0
    stall_after: float | None = None
    stall_shape: str = "silent"
    stall_session: bool = False

    def describe(self) -> str:
        """A one-line summary for logs and ``--help`` echoes."""
        parts: list[str] = []
        if self.goaway_every is not None:
            close = "" if self.goaway_close_code == 1008 else f", close {self.goaway_close_code}"
            parts.append(
                f"goAway every {self.goaway_every:g}s (timeLeft {self.goaway_time_left:g}s{close})"
            )
        if self.drop_every is not None:
            parts.append(f"drop after {self.drop_every:g}s")
        if self.close_every is not None:
            parts.append(f"close {self.close_code} after {self.close_every:g}s")
        if self.latency:
            parts.append(f"latency {self.latency:g}s each way")
        if self.refuse_resume:
            parts.append(f"refuse {self.refuse_resume} resume(s)")
        if self.stall_after is not None:
            lasting = "session" if self.stall_session else "connection"
            parts.append(
                f"stall ({self.stall_shape}, for the {lasting}) after {self.stall_after:g}s"
            )
        return ", ".join(parts) or "no faults"


_SECONDS = {
    "goaway-every": "goaway_every",
    "goaway-time-left": "goaway_time_left",
    "drop-every": "drop_every",
    "close-every": "close_every",
    "latency": "latency",
    "stall-after": "stall_after",
}
_INTEGERS = {
    "close-code": "close_code",
    "goaway-close-code": "goaway_close_code",
    "refuse-resume": "refuse_resume",
}
#: The codes the service closes with at a goAway's deadline.
GO_AWAY_CLOSE_CODES = (1008, 1011)
DEFAULT_DEADLINE_REASON = "Deadline expired before operation could complete."
"""The reason of a 1011 close at a deadline (the real service's words): the session age cap,
and a connection's deadline with ``deadline_close_code=1011``."""
GO_AWAY_DEADLINE_REASON = (
    "Connection aborted because the client failed to close the connection after receiving a"
    " GoAway signal once the session durat"
)
"""The reason of the 1008 close at a missed goAway deadline, verbatim (cut by the 123-byte
limit of a close frame's reason) from a recorded run: martin-paladino/glosa
``samples/fixtures/lt_en.jsonl`` (``gemini-live-protocol.md``, "Field facts that contradict or
extend the above")."""


def _error(detail: str) -> InjectSpecError:
    return InjectSpecError(f"--inject: {detail}; expected {SPEC_FORM}")


def parse_inject_spec(spec: str) -> InjectSchedule:
    """Read ``spec``; raise :class:`InjectSpecError` naming the bad part and the form."""
    values: dict[str, float | int | str | bool] = {}
    if not spec.strip():
        raise _error("empty SPEC")
    for item in spec.split(","):
        key, sep, raw = item.strip().partition("=")
        key = key.strip().lower()
        if not sep or not raw.strip():
            raise _error(f"{item.strip()!r} is not KEY=VALUE")
        if key in _SECONDS:
            try:
                number: float | int = float(raw)
            except ValueError:
                raise _error(f"{key}={raw!r} is not a number of seconds") from None
            if not number >= 0 or number == float("inf"):
                raise _error(f"{key}={raw} must be a finite number >= 0")
            if key.endswith("-every") and number == 0:
                raise _error(f"{key}=0 would fire at once on every connection; use > 0")
            field = _SECONDS[key]
        elif key == "stall-shape":
            if raw.strip() not in STALL_SHAPES:
                raise _error(f"stall-shape={raw!r} is not one of {', '.join(STALL_SHAPES)}")
            field, word = "stall_shape", raw.strip()
            if field in values:
                raise _error(f"{key} given twice")
            values[field] = word
            continue
        elif key == "stall-session":
            if raw.strip() not in ("0", "1"):
                raise _error(f"stall-session={raw!r} must be 0 or 1")
            if "stall_session" in values:
                raise _error(f"{key} given twice")
            values["stall_session"] = raw.strip() == "1"
            continue
        elif key in _INTEGERS:
            try:
                number = int(raw)
            except ValueError:
                raise _error(f"{key}={raw!r} is not a whole number") from None
            if key == "close-code" and not 1000 <= number <= 4999:
                raise _error(f"close-code={raw} is not a websocket close code (1000-4999)")
            if key == "goaway-close-code" and number not in GO_AWAY_CLOSE_CODES:
                raise _error(f"goaway-close-code={raw} must be 1008 or 1011")
            if number < 0:
                raise _error(f"{key}={raw} must be >= 0")
            field = _INTEGERS[key]
        else:
            raise _error(f"unknown key {key!r}")
        if field in values:
            raise _error(f"{key} given twice")
        values[field] = number
    return InjectSchedule(**values)  # type: ignore[arg-type]
