"""Which Live model family a setup speaks to, as google-adk decides it.

ADK (``utils/model_name_utils.py``, 2.x) treats a model as *Gemini 3.x Live* when its name,
without a ``models/`` or resource path prefix, starts with ``gemini-3.`` and contains
``-live``, except ``gemini-3.5-live-translate*``. The fake server applies the same rule to the
setup's ``model``, so ADK and the fake always agree on the dialect.

What the Gemini 3.x Live dialect changes on the fake server (see the connection module):
text input arrives as ``realtimeInput.text``; a ``toolCall`` is not followed by
``turnComplete`` until the answer; ``clientContent`` is accepted only as initial history.
"""

from __future__ import annotations

from .protocol import JsonDict, pick, pick_dict

__all__ = ["history_in_client_content", "is_gemini_3_live", "model_name"]


def model_name(setup: JsonDict) -> str:
    """The setup's model name without ``models/`` or a resource path (``""`` if absent)."""
    return str(pick(setup, "model") or "").rpartition("/")[2]


def is_gemini_3_live(model: str) -> bool:
    """True for a Gemini 3.x Live model name (ADK's rule; see the module docstring)."""
    return (
        model.startswith("gemini-3.")
        and "-live" in model
        and not model.startswith("gemini-3.5-live-translate")
    )


def history_in_client_content(setup: JsonDict) -> bool:
    """True when the setup's ``historyConfig.initialHistoryInClientContent`` is true."""
    return bool(pick(pick_dict(setup, "historyConfig"), "initialHistoryInClientContent", False))
