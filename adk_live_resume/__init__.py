"""Keep Google ADK live (Gemini Live API) sessions alive across dropped websockets.

Two ways in::

    import adk_live_resume
    adk_live_resume.install()                 # every ADK live run, process-wide

    from adk_live_resume import ResumableLlmAgent
    agent = ResumableLlmAgent(name=..., model=...)   # just this agent

See the README for the guarantees and :class:`ResumePolicy` for the knobs;
:func:`on_reconnect`, :func:`on_run_end` and :mod:`adk_live_resume.telemetry` (OpenTelemetry)
for what happened.
"""

from .errors import (
    InstallConflictError,
    LiveResumeError,
    ReconnectFailedError,
    SessionLimitError,
    SessionNotResumableError,
    UnsupportedAdkVersionError,
)
from .flows import ResumableAutoFlow, ResumableLlmAgent, ResumableSingleFlow
from .handle_store import current_handle, run_config_resuming
from .observe import ReconnectInfo, RunStats, on_reconnect, on_run_end
from .patch import install, installed_policy, is_installed, uninstall
from .policy import ResumePolicy, set_testing, testing_backoff
from .stored_handle import HandleKeyError, ResumeHandle

__version__ = "0.1.0"

__all__ = [
    "HandleKeyError",
    "InstallConflictError",
    "LiveResumeError",
    "ReconnectFailedError",
    "ReconnectInfo",
    "ResumableAutoFlow",
    "ResumableLlmAgent",
    "ResumableSingleFlow",
    "ResumeHandle",
    "ResumePolicy",
    "RunStats",
    "SessionLimitError",
    "SessionNotResumableError",
    "UnsupportedAdkVersionError",
    "current_handle",
    "install",
    "installed_policy",
    "is_installed",
    "on_reconnect",
    "on_run_end",
    "run_config_resuming",
    "set_testing",
    "testing_backoff",
    "uninstall",
]
