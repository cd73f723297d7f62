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
:mod:`adk_live_resume.testing.dialect`, what each model family does differently (2.x, 2.5
native audio, 3.1, 3.8) in :mod:`adk_live_resume.testing.families`, late pongs in
:mod:`adk_live_resume.testing.keepalive`, network latency in front of the server
(:class:`LatencyRelay`) in :mod:`adk_live_resume.testing.latency`, a fault-injecting proxy in
front of any Live endpoint, the real service included (:class:`FaultProxy`), in
:mod:`adk_live_resume.fault_proxy.proxy`, the REST ``generateContent`` /
``streamGenerateContent`` on the same port in :mod:`adk_live_resume.testing.rest`.
``python -m adk_live_resume.testing serve`` keeps a fake running for ``adk web`` by hand. The
pytest plugin
(registered through the ``pytest11`` entry point) provides the ``fake_live_server``,
``fake_live_server_factory`` and ``live_resume_patch`` fixtures; :class:`LiveDriver` drives a
real ``Runner.run_live`` turn by turn; :func:`patch_installed` installs the patch for one
block.

Needs the ``testing`` extra: ``pip install 'adk-live-resume[testing]'``.
"""

from typing import TYPE_CHECKING

from .. import lazy_exports

# Every name is imported on first use (see adk_live_resume.lazy_exports): the pytest plugin
# lives in this package and loads in every pytest run, most of which never start a server.
if TYPE_CHECKING:
    from ..fault_proxy.client_config import FAKE_API_KEY, environment, environment_variables
    from ..fault_proxy.inject_spec import InjectSchedule, InjectSpecError, parse_inject_spec
    from ..fault_proxy.proxy import FaultProxy, ProxiedConnection
    from .driver import LiveDriver, LiveRunEnded, answer_text
    from .faults import INTERNAL_ERROR_REASON, QUOTA_REASON, Fault
    from .handles import HandleIssue, HandleSchedule
    from .latency import LatencyRelay
    from .model import ScriptedModel
    from .patching import patch_installed, patch_removed
    from .recording_check import compare_with_fake
    from .records import ConnectionRecord, HeardTurn, ResentMessage, ToolCallRecord
    from .server import FakeLiveServer
    from .settings import (
        AUDIO_SESSION_LIMIT,
        DEFAULT_DEADLINE_REASON,
        GO_AWAY_DEADLINE_REASON,
        IDLE_CLOSE_AFTER,
    )
    from .speech import silence_pcm, speech_pcm, tone_pcm
    from .vad import VadConfig, decode_speech
    from .wire_shapes import WireShapes
else:  # not for type checkers: without a __getattr__, a misspelt name stays an error
    __getattr__, __dir__ = lazy_exports.attach(
        __name__,
        globals(),
        {
            "FAKE_API_KEY": "..fault_proxy.client_config",
            "environment": "..fault_proxy.client_config",
            "environment_variables": "..fault_proxy.client_config",
            "LiveDriver": ".driver",
            "LiveRunEnded": ".driver",
            "answer_text": ".driver",
            "Fault": ".faults",
            "INTERNAL_ERROR_REASON": ".faults",
            "QUOTA_REASON": ".faults",
            "HandleIssue": ".handles",
            "HandleSchedule": ".handles",
            "InjectSchedule": "..fault_proxy.inject_spec",
            "InjectSpecError": "..fault_proxy.inject_spec",
            "parse_inject_spec": "..fault_proxy.inject_spec",
            "LatencyRelay": ".latency",
            "FaultProxy": "..fault_proxy.proxy",
            "ProxiedConnection": "..fault_proxy.proxy",
            "ScriptedModel": ".model",
            "patch_installed": ".patching",
            "patch_removed": ".patching",
            "compare_with_fake": ".recording_check",
            "ConnectionRecord": ".records",
            "HeardTurn": ".records",
            "ResentMessage": ".records",
            "ToolCallRecord": ".records",
            "FakeLiveServer": ".server",
            "AUDIO_SESSION_LIMIT": ".settings",
            "DEFAULT_DEADLINE_REASON": ".settings",
            "GO_AWAY_DEADLINE_REASON": ".settings",
            "IDLE_CLOSE_AFTER": ".settings",
            "decode_speech": ".vad",
            "silence_pcm": ".speech",
            "speech_pcm": ".speech",
            "tone_pcm": ".speech",
            "VadConfig": ".vad",
            "WireShapes": ".wire_shapes",
        },
    )

__all__ = [
    "AUDIO_SESSION_LIMIT",
    "DEFAULT_DEADLINE_REASON",
    "FAKE_API_KEY",
    "GO_AWAY_DEADLINE_REASON",
    "IDLE_CLOSE_AFTER",
    "INTERNAL_ERROR_REASON",
    "QUOTA_REASON",
    "ConnectionRecord",
    "FakeLiveServer",
    "Fault",
    "FaultProxy",
    "HandleIssue",
    "HandleSchedule",
    "HeardTurn",
    "InjectSchedule",
    "InjectSpecError",
    "LatencyRelay",
    "LiveDriver",
    "LiveRunEnded",
    "ProxiedConnection",
    "ResentMessage",
    "ScriptedModel",
    "ToolCallRecord",
    "VadConfig",
    "WireShapes",
    "answer_text",
    "compare_with_fake",
    "decode_speech",
    "environment",
    "environment_variables",
    "parse_inject_spec",
    "patch_installed",
    "patch_removed",
    "silence_pcm",
    "speech_pcm",
    "tone_pcm",
]
