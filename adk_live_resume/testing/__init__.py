"""A fake Gemini Live server for tests: real TLS websockets on 127.0.0.1, a scripted model.

Run the real google-genai SDK and the real google-adk against it::

    from adk_live_resume.testing import FakeLiveServer, Fault

    async with FakeLiveServer(time_scale=0.01) as server:
        server.script(Fault.close(1011, "boom", mid_turn=True), connection=1)
        client = server.genai_client()
        async with client.aio.live.connect(model="gemini-live-fake", config=...) as session:
            ...
        agent = LlmAgent(name="a", model=server.gemini())

What the model answers is documented in :mod:`adk_live_resume.testing.model`, the faults in
:mod:`adk_live_resume.testing.faults`, the synthetic speech in
:mod:`adk_live_resume.testing.speech`, voice activity detection in
:mod:`adk_live_resume.testing.vad`, when handles are issued and what they restore in
:mod:`adk_live_resume.testing.handles`, the Gemini 3.x Live dialect in
:mod:`adk_live_resume.testing.dialect`. The pytest plugin (registered through the ``pytest11``
entry point) provides the ``fake_live_server`` and ``fake_live_server_factory`` fixtures.
"""

from .client_config import FAKE_API_KEY, environment_variables
from .faults import Fault
from .handles import HandleIssue, HandleSchedule
from .model import ScriptedModel
from .records import ConnectionRecord, HeardTurn, ResentMessage, ToolCallRecord
from .server import FakeLiveServer
from .settings import AUDIO_SESSION_LIMIT, DEFAULT_DEADLINE_REASON
from .speech import decode_speech, silence_pcm, speech_pcm, tone_pcm
from .vad import VadConfig

__all__ = [
    "AUDIO_SESSION_LIMIT",
    "DEFAULT_DEADLINE_REASON",
    "FAKE_API_KEY",
    "ConnectionRecord",
    "FakeLiveServer",
    "Fault",
    "HandleIssue",
    "HandleSchedule",
    "HeardTurn",
    "ResentMessage",
    "ScriptedModel",
    "ToolCallRecord",
    "VadConfig",
    "decode_speech",
    "environment_variables",
    "silence_pcm",
    "speech_pcm",
    "tone_pcm",
]
