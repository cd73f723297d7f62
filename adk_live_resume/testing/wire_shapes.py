"""The recorded shapes of the service's messages that the fake server sends, each a switch.

Pure: no I/O. :class:`WireShapes` says which recorded shape the fake sends; by default every
one the field shows, so a client is tested against what the service sends, not against what
was assumed. A switch turns a shape off where the field is not unanimous, or where a test
needs the older shape. Each shape names its source (``gemini-live-protocol.md``, section
"Field facts that contradict or extend the above", 2026-11-26):

* **UUID handles** (``uuid_handles``): ``newHandle`` values are UUIDs. Source: a real 3.1
  recording, pydantic-ai ``tests/realtime/cassettes/test_parity_ws/
  test_text_tool_round_parity[google-current].yaml`` (2026-08-11). Off: 32 URL-safe
  characters, as before.
* **``fc_<digits>`` call ids** (``fc_call_ids``): the same recording. Off: ``fc-<n>-<hex>``.
  (An older 2.5 recording shows ``function-call-<digits>``; the fake never sent that shape.)
* **Empty ``serverContent {}`` around a ``toolCall``** (``empty_content_around_tool_call``):
  one before and one after the ``toolCall`` on the Gemini 3.x Live families (the same 3.1
  recording; the 2.5 native-audio recordings show nothing between a ``toolCall`` and the
  client's response, so the 2.x families never send them).
* **Empty ``sessionResumptionUpdate {}``** (``empty_updates``): one every 0.5-1 s (real
  seconds, drawn per connection from a seeded generator), whether or not the setup asked for
  resumption. Source: a 25-minute recorded ``gemini-3.5-live-translate-preview`` run,
  martin-paladino/glosa ``samples/fixtures/lt_en.jsonl``. None: never.
* **A handle right after the client's ``toolResponse``** (``handle_after_tool_response``): a
  ``sessionResumptionUpdate{newHandle, resumable: true}`` once the response of the last pending
  call arrived, before the answer it starts (the 3.1 recording above), on the Gemini 3.x Live
  families when the setup asked for resumption. The recording does not say what that handle
  holds; the fake keeps the unanswered response out of it (a resume is asked the response
  again), as it keeps any input the model has not begun to answer out of a handle.
* **``usageMetadata``** (``usage_metadata``): present with ``turnComplete`` in the
  recordings above, measured absent on 3.1 in another app (kazunori279/interpretab README):
  False leaves it out.
* **``serverContent.speechState``** (``speech_state``): the server's voice activity
  detection, ``SPEECH`` / ``NON_SPEECH``, "not set if unchanged" (the Vertex AI RPC
  reference), measured ``SPEECH`` about 0.24 s after speech onset and ``NON_SPEECH`` in the
  same frame as the final ``inputTranscription`` (notes, "Field facts of 2026-11-29"): sent
  in voice sessions with automatic activity detection, ``SPEECH`` once 240 ms of the
  utterance were heard, ``NON_SPEECH`` at the fake's end of the utterance (its
  ``silenceDurationMs`` of silence: 500 ms by default, where the service measured about
  1.2 s). google-genai 2.34 and 3.6.1 drop the field while parsing. False: never sent.
* **3.1 takes ``clientContent`` mid-session** (``refuse_3_1_mid_session_content`` False): the
  3.1 model page, LiveKit PR 7289 (merged 2026-09-15) and a 3.1 recording (pydantic-ai
  ``test_history_seeding_parity[google-current].yaml``) show it accepted; True brings back the
  1007 refusal reported in March-May 2026 (ADK issue 5018, LiveKit PR 5251).
"""

from __future__ import annotations

import random
import secrets
import uuid
from collections.abc import Container
from dataclasses import dataclass

from .protocol import JsonDict

__all__ = ["WireShapes"]

#: Digits of a ``fc_`` call id (the recording's ids are long decimal numbers).
_CALL_ID_DIGITS = 19


@dataclass(frozen=True)
class WireShapes:
    """Which recorded wire shapes the fake server sends (see the module docstring)."""

    uuid_handles: bool = True
    fc_call_ids: bool = True
    empty_content_around_tool_call: bool = True
    #: ``(shortest, longest)`` real seconds between two empty updates; None: none.
    empty_updates: tuple[float, float] | None = (0.5, 1.0)
    handle_after_tool_response: bool = True
    usage_metadata: bool = True
    refuse_3_1_mid_session_content: bool = False
    speech_state: bool = True

    def __post_init__(self) -> None:
        if self.empty_updates is not None:
            low, high = self.empty_updates
            if not 0 < low <= high:
                raise ValueError("empty_updates must be (shortest, longest) with 0 < shortest")

    @classmethod
    def before_recordings(cls) -> WireShapes:
        """The shapes the fake sent before it followed the recordings (every switch off)."""
        return cls(
            uuid_handles=False,
            fc_call_ids=False,
            empty_content_around_tool_call=False,
            empty_updates=None,
            handle_after_tool_response=False,
            usage_metadata=True,
            refuse_3_1_mid_session_content=True,
            speech_state=False,
        )

    def new_handle(self) -> str:
        """A fresh, unguessable resumption handle in the chosen shape."""
        return str(uuid.uuid4()) if self.uuid_handles else secrets.token_urlsafe(24)

    def new_call_id(self, number: int, taken: Container[str]) -> str:
        """A function call id unique among ``taken``; ``number`` counts calls server-wide."""
        while True:
            if self.fc_call_ids:
                call_id = f"fc_{secrets.randbelow(10**_CALL_ID_DIGITS):0{_CALL_ID_DIGITS}d}"
            else:
                call_id = f"fc-{number}-{secrets.token_hex(4)}"
            if call_id not in taken:
                return call_id

    def around_tool_call(self, gemini3: bool) -> list[JsonDict]:
        """The empty ``serverContent`` frame sent before and after a ``toolCall`` (none: [])."""
        return [{"serverContent": {}}] if gemini3 and self.empty_content_around_tool_call else []

    def handle_after_response(self, gemini3: bool, resumption: bool) -> bool:
        """Whether a handle follows the response of the last pending call."""
        return gemini3 and resumption and self.handle_after_tool_response

    def empty_update_waits(self, seed: int) -> random.Random | None:
        """The generator of the waits between empty updates on connection ``seed`` (None:
        none are sent)."""
        return None if self.empty_updates is None else random.Random(seed)

    def next_empty_update(self, rng: random.Random) -> float:
        """Real seconds until the next empty update."""
        assert self.empty_updates is not None
        return rng.uniform(*self.empty_updates)


#: The empty resumption update of the glosa recording.
EMPTY_UPDATE: JsonDict = {"sessionResumptionUpdate": {}}
