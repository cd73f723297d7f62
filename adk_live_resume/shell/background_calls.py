"""Tool calls ADK runs in the background (NON_BLOCKING) while a repeat of them waits.

A resumed session may repeat a call whose first run is still going in the background; the
repeat is held until that run's response (:mod:`adk_live_resume.conversation.tool_calls` decides).
This module watches those runs end: a run that ended without a response gets its waiting repeat
answered with an error, so the model is not left waiting.

Guarantees: each running call is watched once; nothing is answered once the session is being
left (:attr:`BackgroundCalls.leaving`: a transfer, the run's end), when ADK stops its
background tools itself; a tool is never run again for its repeat.
"""

from __future__ import annotations

import logging
from typing import Any

from google.genai import types

from ..compat import adk_compat
from ..conversation.tool_calls import ENDED_WITHOUT_RESULT, ToolCallBook

logger = logging.getLogger("adk_live_resume.loop")


class BackgroundCalls:
    """The background tool runs of one live run's invocation ``ctx``."""

    def __init__(self, ctx: Any, tool_calls: ToolCallBook) -> None:
        self.ctx = ctx
        self.tool_calls = tool_calls
        #: Running calls whose end is watched (a repeat waits for their response).
        self._watched_calls: set[str] = set()
        #: The session is being left (a transfer, the run's end): ADK stops its background
        #: tools, and a repeat held for one of them is not answered.
        self.leaving = False

    def leave(self) -> None:
        """The session is being left (a transfer, the run's end): ADK stops its background
        tools, and no repeat held for one of them is answered from now on."""
        self.leaving = True

    def tool_running(self, call_id: str, name: str | None) -> bool:
        """ADK runs the tool of ``call_id`` in the background now."""
        return adk_compat.running_tool_task(self.ctx, call_id, name) is not None

    def watch_running_call(self, call_id: str) -> None:
        """A repeat waits for the response of the running ``call_id``: learn when ADK's
        background run of it ends (the response, if any, is queued before that)."""
        if call_id in self._watched_calls:
            return
        task = adk_compat.running_tool_task(self.ctx, call_id, self.tool_calls.name_of(call_id))
        if task is None:  # ended in between: its response, if any, is queued already
            self._running_call_ended(call_id)
            return
        self._watched_calls.add(call_id)
        task.add_done_callback(lambda _: self._running_call_ended(call_id))

    def _running_call_ended(self, call_id: str) -> None:
        self._watched_calls.discard(call_id)
        if self.leaving:
            return  # ADK stopped it: this session ends (a transfer, the run's end)
        repeat = self.tool_calls.on_running_ended(call_id)
        if repeat is None:
            return
        repeat_id, name = repeat
        logger.warning(
            "tool %s ended without a response while the model's repeat of the call waited"
            " for it; the repeat is answered with an error and the tool is not run again",
            name,
        )
        response = types.FunctionResponse(id=repeat_id, name=name, response=ENDED_WITHOUT_RESULT)
        content = types.Content(role="user", parts=[types.Part(function_response=response)])
        self.ctx.live_request_queue.send_content(content)
