"""The google-genai internals the patch reaches under, and what the installed release parses.

This is the only module that knows google-genai's private names. ADK's live connection talks
to the service through a google-genai ``AsyncSession``; the patch reads and replaces a few
of its internals, each named once here:

* ``AsyncSession._ws``, the websockets connection under a session (:func:`websocket_of`):
  the frame watch and the chunk encoder write on it, and the message decoder reads it; a
  copy of a session runs the SDK's own code against a stand-in (:func:`run_on_stand_in`);
* ``AsyncSession.send_realtime_input`` and ``AsyncSession._receive``, told apart from a
  wrapper of them (:func:`sdk_send_realtime_input`, :func:`sdk_receive`; :func:`set_receive`
  puts the decoder's reading in place of the latter);
* ``google.genai.live.ws_connect``, which opens every live websocket (the early dial puts a
  pass-through in its place: :func:`set_genai_ws_connect`);
* what the release parses and sends, found by feature: the top-level server message keys it
  knows (:func:`server_message_keys`; a message with none of them makes ``AsyncSession._receive``
  raise ``TypeError`` from 1.75 on), whether it parses ``interactionStatus``
  (:func:`parses_interaction_status`), whether it sends ``history_config``
  (:func:`sdk_accepts_history_config`), the Vertex AI dialect of a session.

The version string is used for one thing only: ``install()``'s WARNING above the newest
tested release (:data:`TESTED_GENAI_NEWEST`). Whether each internal is where it is looked
for is checked once per process (:func:`probe_internals`, read by
:mod:`adk_live_resume.compat.hooks`).
"""

from __future__ import annotations

import copy
import functools
import inspect
import os
from collections.abc import Callable, Coroutine
from typing import Any

from .adk_compat import parse_version

#: The newest google-genai release tested (the newest every tested google-adk allows; the
#: matrix's ``--dependency-bounds`` pass installs it). ``install()`` warns once above it.
TESTED_GENAI_NEWEST = "2.34.0"


def genai_version() -> str:
    """The installed google-genai version string."""
    from google.genai import version

    return str(version.__version__)


def genai_is_newer_than_tested(version: str | None = None) -> bool:
    """True when google-genai (installed, or ``version``) is above :data:`TESTED_GENAI_NEWEST`
    in its major or minor number (a patch release of the tested one counts as tested)."""
    installed = parse_version(version or genai_version())[:2]
    return installed > parse_version(TESTED_GENAI_NEWEST)[:2]


@functools.cache
def sdk_accepts_history_config(vertex: bool) -> bool:
    """Whether the installed google-genai sends ``LiveConnectConfig.history_config``.

    Older releases (1.75, with google-adk 1.27) refuse it for Vertex AI with a ValueError
    ("history_config parameter is not supported in Gemini Enterprise Agent Platform");
    told by the presence of that refusal in the SDK's converters, not by a version number.
    The oldest releases google-adk allows (1.56) have no such field at all: False there.
    """
    from google.genai import types

    if "history_config" not in types.LiveConnectConfig.model_fields:
        return False
    if not vertex:
        return True
    try:
        from google.genai import _live_converters

        source = inspect.getsource(_live_converters)
    except (ImportError, OSError, TypeError):
        return True
    return "history_config parameter is not supported" not in source


#: ``AsyncSession``'s websockets connection.
GENAI_WEBSOCKET = "_ws"
#: The function of ``google.genai.live`` that opens every live websocket.
GENAI_WS_CONNECT = "ws_connect"
#: ``AsyncSession``'s method for microphone chunks.
GENAI_SEND_REALTIME_INPUT = "send_realtime_input"
#: ``AsyncSession``'s method that reads and parses one server message (``receive`` calls it).
GENAI_RECEIVE = "_receive"


def websocket_of(session: Any) -> Any:
    """The ``websockets`` connection under a google-genai ``AsyncSession``, if reachable."""
    return getattr(session, GENAI_WEBSOCKET, None)


def abort_transport(session: Any) -> None:
    """Abort the socket under a google-genai ``AsyncSession`` at once: no close handshake,
    nothing waited for (nothing happens when its websocket is not reachable)."""
    websocket = websocket_of(session)
    transport = getattr(websocket, "transport", None)
    if transport is not None:
        transport.abort()


def sdk_send_realtime_input(session: Any) -> Any:
    """google-genai's own ``AsyncSession.send_realtime_input`` if that is what a call of
    ``session.send_realtime_input`` runs, else None (wrapped, replaced or overridden).

    Told by the function's code, defined in google-genai's ``live`` module under that name,
    not by ``__module__``/``__qualname__``, which a ``functools.wraps`` wrapper copies; a
    function carrying ``__wrapped__``, or one set on the instance, is not the SDK's own.
    """
    return _sdk_own(session, GENAI_SEND_REALTIME_INPUT)


def sdk_receive(session: Any) -> Any:
    """google-genai's own ``AsyncSession._receive`` if that is what ``session.receive`` calls
    for each message, else None (told as :func:`sdk_send_realtime_input` tells its method)."""
    return _sdk_own(session, GENAI_RECEIVE)


def set_receive(session: Any, function: Any) -> None:
    """Have ``session.receive`` read each message with ``function`` (no argument) instead of
    its class's ``_receive``."""
    setattr(session, GENAI_RECEIVE, function)


def _sdk_own(session: Any, name: str) -> Any:
    if name in getattr(session, "__dict__", ()):
        return None
    method = getattr(type(session), name, None)
    return method if _is_sdk_own(method, name) else None


def _is_sdk_own(method: Any, name: str) -> bool:
    code = getattr(method, "__code__", None)
    if code is None or hasattr(method, "__wrapped__"):
        return False
    from google.genai import live

    source = getattr(live, "__file__", None)
    return (
        source is not None
        and code.co_name == name
        and os.path.normcase(os.path.abspath(code.co_filename))
        == os.path.normcase(os.path.abspath(source))
    )


def run_on_stand_in(
    session: Any, websocket: Any, call: Callable[[Any], Coroutine[Any, Any, Any]]
) -> Any:
    """What ``call(stand_in)`` returns (or raises), run to its end at once, where
    ``stand_in`` is a copy of the google-genai ``AsyncSession`` ``session`` on ``websocket``
    (the real socket is never touched): the SDK's own code against a websocket that never
    waits. RuntimeError if the call waits on anything else."""
    stand_in = copy.copy(session)
    setattr(stand_in, GENAI_WEBSOCKET, websocket)
    coroutine = call(stand_in)
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value
    coroutine.close()
    raise RuntimeError("google-genai waited on something other than the stand-in websocket")


def genai_live_module() -> Any:
    """google-genai's ``live`` module (its ``ws_connect`` opens every live websocket)."""
    import google.genai.live

    return google.genai.live


def genai_ws_connect() -> Any:
    """google-genai's ``ws_connect`` as it is now (ours once hooked), or None if absent."""
    return getattr(genai_live_module(), GENAI_WS_CONNECT, None)


def set_genai_ws_connect(function: Any) -> None:
    """Put ``function`` in place of google-genai's ``ws_connect``."""
    setattr(genai_live_module(), GENAI_WS_CONNECT, function)


def is_vertex_session(session: Any) -> bool:
    """Whether a google-genai ``AsyncSession`` talks the Vertex AI dialect."""
    return bool(getattr(getattr(session, "_api_client", None), "vertexai", False))


class _Marker:
    """Stands for a value handed to a constructor, to see where it is kept."""


def probe_internals() -> dict[str, bool]:
    """Whether each google-genai internal the patch hooks is where it looks for it, by its
    qualified name. Constructs a session (no I/O) to find an attribute set in ``__init__``."""
    from google.genai import live

    found: dict[str, bool] = {}
    marker = _Marker()
    try:
        session = live.AsyncSession(api_client=None, websocket=marker)  # type: ignore[arg-type]
        found[f"google.genai.live.AsyncSession.{GENAI_WEBSOCKET}"] = websocket_of(session) is marker
    except Exception:
        found[f"google.genai.live.AsyncSession.{GENAI_WEBSOCKET}"] = False
    found[f"google.genai.live.AsyncSession.{GENAI_SEND_REALTIME_INPUT}"] = callable(
        getattr(live.AsyncSession, GENAI_SEND_REALTIME_INPUT, None)
    )
    found[f"google.genai.live.AsyncSession.{GENAI_RECEIVE}"] = callable(
        getattr(live.AsyncSession, GENAI_RECEIVE, None)
    )
    found[f"google.genai.live.{GENAI_WS_CONNECT}"] = callable(getattr(live, GENAI_WS_CONNECT, None))
    return found


@functools.cache
def parses_interaction_status() -> bool:
    """Whether the installed google-genai parses ``serverContent.interactionStatus``
    (``LiveServerContent.interaction_status``, 2.x; 1.x drops the field while parsing)."""
    from google.genai import types

    return "interaction_status" in types.LiveServerContent.model_fields


@functools.cache
def server_message_keys() -> frozenset[str]:
    """The top-level keys of a server message the installed google-genai parses: the wire
    names (camelCase aliases) of ``LiveServerMessage``'s fields (``serverContent``,
    ``toolCall``, ``goAway``...; ``voiceActivity`` from 1.75). Its converters keep exactly
    these, in both dialects; a message carrying none of them is a kind it does not know."""
    from google.genai import types

    return frozenset(
        field.alias or name for name, field in types.LiveServerMessage.model_fields.items()
    )
