"""The ways the service says no that a key can show (``gemini-live-protocol.md``, "Field facts
of 2026-11-29"), which the loop tells apart (``adk_live_resume.rules.failure_classes``):

* **the idle close**: a connection that carries no traffic is closed with 1008 and no
  ``goAway``, about 151 s after its last client message, and the session behind it is still
  there: its handle resumes (Omi fork, probe ``lane5-goaway.py``, 2026-08-24). A slow case:
  on the real service it runs only with ``ADK_LIVE_RESUME_CONFORMANCE_SLOW=1``; the fake
  closes after 1 s here (``idle_close_after``).
* **a model refused at every setup**: a Live model the Gemini API changelog says was shut
  down (``gemini-2.0-flash-live-001``, 2025-12-09) is refused at every setup, the same way
  each time, before ``setupComplete`` (a model refusing every handshake showed as 1011
  "Internal error encountered", 2026-08-24). ``ADK_LIVE_RESUME_CONFORMANCE_RETIRED_MODEL``
  names another; the fake refuses the model it is told to (``refused_models``).

**Not provokable: the quota close.** A close for a spent quota (1011 "You exceeded your
current quota, ...", also about 0.8 s after the setup of a session opened with the quota
spent) needs a project whose quota is spent: spending one on purpose costs its owner the
service for a minute or more (the free tier's per-minute token bucket) and, on a paid plan,
money, so no case here does it. The fake follows a third party's measurement with a named
harness (kazunori279/interpretab, ``tests/quota-close.mjs``; GoogleCloudPlatform/
generative-ai issue 1576 for "RESOURCE_EXHAUSTED: Maximum concurrent sessions"), and
``tests/e2e/test_failure_classes_e2e.py`` checks the loop against it. If you hit one, the
``--report`` of this suite does not show it: please report the close's reason and when it
came (docs/conformance.md).
"""

from __future__ import annotations

import os

import pytest
from google.genai import errors
from websockets.exceptions import ConnectionClosed

from .conftest import Target
from .tap import Tap, turn_complete
from .test_protocol_assumptions import ANSWER, _config, _handle_after_turn, _say, _session

pytestmark = [pytest.mark.timeout(400)]

RETIRED_ENV = "ADK_LIVE_RESUME_CONFORMANCE_RETIRED_MODEL"
#: Shut down on 2025-12-09 (the Gemini API changelog).
RETIRED = "gemini-2.0-flash-live-001"
#: The fake's idle close here (real seconds), and the service's measured one.
FAKE_IDLE = 1.0
SERVICE_IDLE = 151.0


async def test_an_idle_connection_is_closed_with_1008_and_no_go_away_and_resumes(
    target: Target,
) -> None:
    target.needs_the_clock()
    if target.server is not None:
        target.server.change_settings(idle_close_after=FAKE_IDLE)
    idle = FAKE_IDLE if target.is_fake else SERVICE_IDLE
    async with _session(target, _config(target)) as (session, tap):
        await _say(session, "hello")
        handle = await _handle_after_turn(tap)
        error = await tap.wait_end(idle + 60)
        went = tap.index(lambda f: "goAway" in f)
    assert went is None, "a goAway came first: the connection was not closed for idleness"
    assert error is not None and error.code == 1008, error
    async with _session(target, _config(target, handle=handle)) as (again, tap):
        await _say(again, "are you still there?")
        await tap.wait(lambda t: t.index(turn_complete) is not None, ANSWER, "an answer")


def _close_of(error: BaseException) -> tuple[int | None, str]:
    """The close code and reason an exception of google-genai or websockets reports."""
    if isinstance(error, errors.APIError):
        return error.code, str(error.message or "")
    if isinstance(error, ConnectionClosed) and error.rcvd is not None:
        return error.rcvd.code, error.rcvd.reason
    return None, f"{type(error).__name__}: {error}"


async def test_a_retired_model_is_refused_at_every_setup_the_same_way(target: Target) -> None:
    if target.server is not None:
        model = "gemini-live-retired"
        target.server.change_settings(refused_models=frozenset({model}))
    else:
        model = os.environ.get(RETIRED_ENV, RETIRED)
    closes: list[tuple[int | None, str]] = []
    for _ in range(2):
        try:
            async with target.client().aio.live.connect(
                model=model, config=_config(target)
            ) as session:
                tap = Tap(session)
                try:
                    await _say(session, "hello")
                    ended = await tap.wait_end(ANSWER)
                finally:
                    tap.close()
                raise AssertionError(f"the setup of {model} was answered; it ended with {ended!r}")
        except (errors.APIError, ConnectionClosed) as refused:
            closes.append(_close_of(refused))
    assert closes[0][0] is not None, closes
    assert closes[0] == closes[1], f"refused differently: {closes}"
