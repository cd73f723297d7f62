"""Keep Google ADK live (Gemini Live API) sessions alive across dropped websockets.

Two ways in::

    import adk_live_resume
    adk_live_resume.install()                 # every ADK live run, process-wide

    from adk_live_resume import ResumableLlmAgent
    agent = ResumableLlmAgent(name=..., model=...)   # just this agent

See docs/guarantees.md for the guarantees and :class:`ResumePolicy` for the knobs;
:func:`on_reconnect`, :func:`on_run_end` (with its :class:`TokenUsage`) and
:mod:`adk_live_resume.observe.telemetry` (OpenTelemetry) for what happened; :func:`on_before_move`
for what is about to; :func:`on_retry` for a say in whether and when to retry; :func:`request_move`
and :func:`request_fresh_start` to move a session on demand.
"""

from typing import TYPE_CHECKING

from . import lazy_exports

# Every name is imported on first use (see lazy_exports), so `import adk_live_resume` costs
# next to nothing: apps import it at start-up, and pytest imports it in every run through the
# plugin (adk_live_resume.testing.pytest_plugin). The flows pull in ADK's llm-flow internals,
# the handle store pulls in cryptography; install() imports what it needs when called.
if TYPE_CHECKING:
    from .conversation.token_usage import TokenUsage
    from .launch.flows import ResumableAutoFlow, ResumableLlmAgent, ResumableSingleFlow
    from .launch.patch import install, installed_policy, is_installed, uninstall
    from .observe.callbacks import (
        MoveNotice,
        ReconnectInfo,
        RunStats,
        on_before_move,
        on_reconnect,
        on_run_end,
    )
    from .resumption.handle_store import current_handle, run_config_resuming
    from .resumption.stored_handle import HandleKeyError, ResumeHandle
    from .rules.errors import (
        Drop,
        IdleCloseError,
        InstallConflictError,
        LiveResumeError,
        ModelRefusedError,
        NoLiveRunError,
        PoisonedSessionError,
        QuotaExceededError,
        ReconnectFailedError,
        SessionLimitError,
        SessionNotResumableError,
        SessionStalledError,
        UnsupportedAdkVersionError,
    )
    from .rules.policy import ResumePolicy, set_testing, testing_backoff
    from .rules.retry_hooks import on_retry
    from .shell.steering import request_fresh_start, request_move
else:  # not for type checkers: without a __getattr__, a misspelt name stays an error
    __getattr__, __dir__ = lazy_exports.attach(
        __name__,
        globals(),
        {
            "Drop": ".rules.errors",
            "IdleCloseError": ".rules.errors",
            "InstallConflictError": ".rules.errors",
            "LiveResumeError": ".rules.errors",
            "ModelRefusedError": ".rules.errors",
            "NoLiveRunError": ".rules.errors",
            "PoisonedSessionError": ".rules.errors",
            "QuotaExceededError": ".rules.errors",
            "ReconnectFailedError": ".rules.errors",
            "SessionStalledError": ".rules.errors",
            "SessionLimitError": ".rules.errors",
            "SessionNotResumableError": ".rules.errors",
            "UnsupportedAdkVersionError": ".rules.errors",
            "ResumableAutoFlow": ".launch.flows",
            "ResumableLlmAgent": ".launch.flows",
            "ResumableSingleFlow": ".launch.flows",
            "current_handle": ".resumption.handle_store",
            "run_config_resuming": ".resumption.handle_store",
            "MoveNotice": ".observe.callbacks",
            "ReconnectInfo": ".observe.callbacks",
            "RunStats": ".observe.callbacks",
            "on_before_move": ".observe.callbacks",
            "on_reconnect": ".observe.callbacks",
            "on_run_end": ".observe.callbacks",
            "install": ".launch.patch",
            "installed_policy": ".launch.patch",
            "is_installed": ".launch.patch",
            "uninstall": ".launch.patch",
            "ResumePolicy": ".rules.policy",
            "set_testing": ".rules.policy",
            "testing_backoff": ".rules.policy",
            "on_retry": ".rules.retry_hooks",
            "request_fresh_start": ".shell.steering",
            "request_move": ".shell.steering",
            "HandleKeyError": ".resumption.stored_handle",
            "ResumeHandle": ".resumption.stored_handle",
            "TokenUsage": ".conversation.token_usage",
        },
    )

__version__ = "0.1.0"

__all__ = [
    "Drop",
    "HandleKeyError",
    "IdleCloseError",
    "InstallConflictError",
    "LiveResumeError",
    "ModelRefusedError",
    "MoveNotice",
    "NoLiveRunError",
    "PoisonedSessionError",
    "QuotaExceededError",
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
    "SessionStalledError",
    "TokenUsage",
    "UnsupportedAdkVersionError",
    "current_handle",
    "install",
    "installed_policy",
    "is_installed",
    "on_before_move",
    "on_reconnect",
    "on_retry",
    "on_run_end",
    "request_fresh_start",
    "request_move",
    "run_config_resuming",
    "set_testing",
    "testing_backoff",
    "uninstall",
]
