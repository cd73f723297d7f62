"""Context updates and unknown client sends of one live run: what a new session must be told.

``contextUpdate`` (google-genai 2.32+ ``AsyncSession.send_context_update``) sets the
session's system instruction and tools mid-session, in order with the other input;
``tools=[]`` clears them (notes, "Field facts that contradict or extend the above"). The
outbox records each update like any other send, so a resumed session whose handle may not
cover it gets it again (:mod:`adk_live_resume.conversation.outbox`). A fresh session holds nothing
of the old one: :class:`ContextUpdates` keeps what the updates set, and
:meth:`ContextUpdates.applied_to` puts it in the fresh session's setup.

A send method the tap does not know is passed through unrecorded: :class:`ContextUpdates`
names it, and a resume or fresh start that cannot account for it asks
:meth:`ContextUpdates.unaccounted` (the caller logs one WARNING).

Guarantees:

* :meth:`ContextUpdates.applied_to` gives a copy of the request whose system instruction and
  tools are the newest each update set (a field no update set stays the setup's; ``tools=[]``
  gives no tools); the caller's request is untouched;
* :meth:`ContextUpdates.unaccounted` names each unknown method sent since the newest handle
  (a resume) or ever in the run (a fresh start), once per resume or fresh start.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from google.genai import types

__all__ = ["CONTEXT_UPDATE", "ContextUpdates"]

#: The session method that sends a ``contextUpdate``.
CONTEXT_UPDATE = "send_context_update"

#: The send methods the tap knows (recorded, replayed); any other is passed through.
KNOWN_SENDS = frozenset(
    {"send", "send_client_content", "send_realtime_input", "send_tool_response", CONTEXT_UPDATE}
)


def _instruction_text(value: Any) -> str | None:
    """A system instruction as the text ADK's request holds (``None`` if it has none)."""
    if isinstance(value, str):
        return value
    if isinstance(value, types.Content):
        return "".join(part.text or "" for part in value.parts or [])
    if isinstance(value, types.Part):
        return value.text
    if isinstance(value, (list, tuple)):
        texts = [_instruction_text(item) for item in value]
        return "".join(t for t in texts if t)
    return None


@dataclass
class ContextUpdates:
    """What the run's context updates set, and the unknown sends it passed through."""

    #: The newest system instruction an update set (text), if any.
    system_instruction: str | None = None
    #: The newest tools an update set (``[]``: none), if any.
    tools: list[Any] | None = None
    _unknown_since_handle: dict[str, None] = field(default_factory=dict)
    _unknown_in_run: dict[str, None] = field(default_factory=dict)

    def on_update(self, kwargs: Mapping[str, Any]) -> None:
        """A ``send_context_update(**kwargs)`` went to the session."""
        instruction = kwargs.get("system_instruction")
        if instruction is not None:
            self.system_instruction = _instruction_text(instruction)
        tools = kwargs.get("tools")
        if tools is not None:
            self.tools = list(tools)

    def on_unknown(self, method: str) -> None:
        """The session method ``method``, unknown to the tap, was passed through."""
        self._unknown_since_handle[method] = None
        self._unknown_in_run[method] = None

    def on_handle(self) -> None:
        """A new resumable handle holds everything sent before it."""
        self._unknown_since_handle.clear()

    def unaccounted(self, *, fresh: bool) -> tuple[str, ...]:
        """The unknown methods a new session may lack: sent since the newest handle (a
        resume) or ever in the run (``fresh``)."""
        found = tuple(self._unknown_in_run if fresh else self._unknown_since_handle)
        self._unknown_since_handle.clear()
        return found

    def applied_to(self, request: Any) -> Any:
        """``request`` (ADK's ``LlmRequest``) for a fresh session: a copy with the system
        instruction and tools the updates set, or ``request`` itself if none did."""
        if self.system_instruction is None and self.tools is None:
            return request
        config = (request.config or types.GenerateContentConfig()).model_copy()
        if self.system_instruction is not None:
            config.system_instruction = self.system_instruction
        if self.tools is not None:
            config.tools = [tool for tool in self.tools if isinstance(tool, types.Tool)] or None
        live = request.live_connect_config
        update: dict[str, Any] = {"config": config}
        if live is not None:
            live = live.model_copy()
            if self.tools is not None:
                live.tools = config.tools
            update["live_connect_config"] = live
        return request.model_copy(update=update)

    def untranslatable_tools(self) -> bool:
        """Some tools an update set are not ``types.Tool`` (a Python function the SDK
        declares): a fresh session's setup cannot carry them."""
        return self.tools is not None and any(not isinstance(t, types.Tool) for t in self.tools)
