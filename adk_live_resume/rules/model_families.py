"""What the live service does differently per model family, as far as the loop must know it.

Pure: no I/O; callers say whether ADK speaks its Gemini 3.x Live dialect to the model
(:func:`adk_live_resume.compat.adk_compat.speaks_gemini_3_live`). Facts from recordings of real
sessions and field reports (``gemini-live-protocol.md``, "Turn 3"):

* Context the resumption handle lacks (finished exchanges after it, a background tool's late
  result) reaches a resumed session only as ``clientContent`` turns. Gemini 2.x Live takes
  them all session long; 3.8 and later take ``clientContent`` with roles all session long.
  On Gemini 3.1 Live the field is split: reports of March-May 2026 say it closes the
  connection with 1007 on ``clientContent`` after the initial history; its model page,
  LiveKit PR 7289 and a 3.1 recording (``gemini-live-protocol.md``, "Field facts that
  contradict or extend the above") say it takes it now. The loop keeps 3.1 on the strict
  side, which is correct whichever is true: such context goes to one fresh session as its
  history, which every 3.1 session takes. Taking 3.1 as accepting would, where it refuses,
  end the run with 1007 after a resume, and a 1007 cannot be told apart from its other
  causes (context exhausted, a refused handle) to fall back. What the strict side costs where
  3.1 accepts: a fresh session instead of a resume when the handle lacks finished exchanges,
  and a background result that arrives after a fresh start is kept in the ADK session only.
* Gemini 2.5 native-audio models send no ``turnComplete`` between a ``toolCall`` and the
  tool response: the same turn goes on after the response. ADK 1.28 and later hold tool calls
  until ``turnComplete`` for every model but 3.x Live, so without help a native-audio tool
  call never reaches the tool (see :class:`adk_live_resume.compat.tap.SessionTap`).
"""

from __future__ import annotations

import re

__all__ = [
    "FIRST_3X_TAKING_CONTENT",
    "ends_turn_after_tool_call",
    "is_gemini_3_live",
    "takes_mid_session_content",
]

#: The first Gemini 3.x minor version known to take ``clientContent`` mid-session.
FIRST_3X_TAKING_CONTENT = 8

_GEMINI_3_MINOR = re.compile(r"gemini-3\.(\d+)")


def _bare(model_name: str | None) -> str:
    return (model_name or "").rpartition("/")[2]


def is_gemini_3_live(model_name: str | None) -> bool:
    """Whether ``model_name`` names a Gemini 3.x Live model, whatever ADK's release knows of
    the family: its name begins ``gemini-3.`` and has ``-live`` in it, the translation model
    ``gemini-3.5-live-translate`` aside (the rule ADK 2.13 applies, ``gemini-live-protocol.md``,
    "Model families"). Such a model answers a history it was given only at the next user
    input."""
    bare = _bare(model_name)
    return (
        bare.startswith("gemini-3.")
        and "-live" in bare
        and not bare.startswith("gemini-3.5-live-translate")
    )


def takes_mid_session_content(model_name: str | None, *, gemini_3_dialect: bool) -> bool:
    """True when a session of ``model_name`` takes ``clientContent`` turns mid-session.

    ``gemini_3_dialect``: ADK talks to the model in its Gemini 3.x Live dialect. Such a model
    whose minor version cannot be read (a name ADK counts as 3.x but this rule does not
    understand) is taken as strict, the safe side: its context goes to a fresh session.
    """
    if not gemini_3_dialect:
        return True
    match = _GEMINI_3_MINOR.match(_bare(model_name))
    return match is not None and int(match.group(1)) >= FIRST_3X_TAKING_CONTENT


def ends_turn_after_tool_call(model_name: str | None, *, gemini_3_dialect: bool) -> bool:
    """True when the service follows a ``toolCall`` with ``turnComplete`` for this model
    (Gemini 2.x Live models other than native audio); False for native-audio models and for
    Gemini 3.x Live, whose turn goes on after the tool response (a 3.x Live name counts
    whatever ADK's dialect: releases 1.28 to 2.0 hold calls until ``turnComplete`` and do not
    know the family)."""
    bare = _bare(model_name)
    if gemini_3_dialect or (bare.startswith("gemini-3") and "live" in bare):
        # (the service's behaviour, whether or not this ADK release knows the family)
        return False
    return "native-audio" not in bare
