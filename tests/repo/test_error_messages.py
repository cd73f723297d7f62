"""Every exception class the package raises says what happened and what to do first.

ADK's web server closes the browser's socket with the run's error as the close reason, and a
close reason is cut at 123 bytes; a log line or a test report is read from its start too. So
the first 120 bytes of every message, as actually raised, must name what happened and what to
do (details, causes and the values seen come after).

The classes are found by reading the package (:mod:`ast`): every exception class it defines
(private ones aside) must have a case below that raises it through the package's own code, or
be listed in :data:`NOT_RAISED` with the reason. A new class fails here until it has a case.
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import glob
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cryptography.fernet import Fernet

import adk_live_resume
from adk_live_resume import ResumableLlmAgent, ResumePolicy
from adk_live_resume.compat import adk_compat
from adk_live_resume.fault_proxy.inject_spec import parse_inject_spec
from adk_live_resume.launch.config import resolve_policy
from adk_live_resume.launch.launcher import plan_launch, split_argv
from adk_live_resume.resumption.stored_handle import HandleSealer, ResumeHandle, SessionKey
from adk_live_resume.rules import retry_hooks
from adk_live_resume.rules.errors import Drop
from adk_live_resume.rules.next_step import GiveUp, RunView, next_step
from adk_live_resume.rules.outage import AttemptEnd
from adk_live_resume.testing import FakeLiveServer, Fault
from adk_live_resume.testing.driver import LiveDriver
from adk_live_resume.testing.proxy_cli import parse_command

PACKAGE = Path(adk_live_resume.__file__).resolve().parent
#: What a browser is shown of a run's error (ADK cuts the close reason at 123 bytes).
FIRST = 120

#: Exception classes the package defines and never raises, with the reason.
NOT_RAISED = {
    "LiveResumeError": "the base class: only its subclasses are raised",
    "InstallConflictError": "kept for compatibility, no longer raised",
    "ConnectionRetired": "ends a retired connection's receive inside the loop, never a user's",
}

BUILTIN_EXCEPTIONS = frozenset(
    name
    for name in dir(builtins)
    if isinstance(getattr(builtins, name), type)
    and issubclass(getattr(builtins, name), BaseException)
)


def exception_classes() -> dict[str, str]:
    """Every public exception class the package defines, with where (read with :mod:`ast`)."""
    classes: dict[str, tuple[list[str], str]] = {}
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases = [getattr(b, "id", getattr(b, "attr", "")) for b in node.bases]
                classes[node.name] = (bases, f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    exceptions = set(BUILTIN_EXCEPTIONS)
    changed = True
    while changed:
        changed = False
        for name, (bases, _) in classes.items():
            if name not in exceptions and any(base in exceptions for base in bases):
                exceptions.add(name)
                changed = True
    return {
        name: where
        for name, (_, where) in classes.items()
        if name in exceptions and not name.startswith("_")
    }


@dataclass(frozen=True)
class Case:
    """One way the package raises ``cls``: ``provoke`` raises it (sync or async; it gets
    pytest's ``monkeypatch``); the first 120 bytes must hold one of ``happened`` and one of
    ``to_do`` (compared without case)."""

    cls: str
    name: str
    provoke: Callable[[pytest.MonkeyPatch], Awaitable[None] | None]
    happened: tuple[str, ...]
    to_do: tuple[str, ...]


CASES: list[Case] = []


def case(
    cls: str, *, happened: tuple[str, ...], to_do: tuple[str, ...]
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def register(provoke: Callable[..., Any]) -> Callable[..., Any]:
        CASES.append(Case(cls, provoke.__name__, provoke, happened, to_do))
        return provoke

    return register


# ---- a live run's errors (the ones a browser is shown) ---------------------------------------

HANDLE = "handle-abcdefghijklmnopqrstuvwxyz"
QUOTA = (
    "You exceeded your current quota, please check your plan and billing details. For more"
    " information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits"
)


def _drop(
    code: int | None,
    *,
    at_connect: bool = False,
    reason: str = "x",
    resumed: bool = False,
    answered: bool = False,
    quiet: float = 0.0,
) -> AttemptEnd:
    return AttemptEnd(
        "drop",
        at=0.0,
        drop=Drop("closed", code, reason),
        at_connect=at_connect,
        resumed=resumed,
        answered=answered,
        connected_for=0.0 if at_connect else max(quiet, 0.8),
        quiet_for=quiet,
    )


STALL = AttemptEnd("stall", at=0.0, what="no answer 3.0 s after a typed turn", silence=True)


def _give_up(
    ends: list[AttemptEnd],
    *,
    policy: ResumePolicy | None = None,
    handle: bool = True,
    limited: bool = False,
    room: bool = True,
) -> None:
    """Decide about ``ends`` in order, as the loop does (``next_step``); raise the error the
    run gives up with."""
    outage = None
    for number, end in enumerate(ends):
        view = RunView(
            policy or ResumePolicy(),
            model="gemini-live-fake",
            handle=handle,
            session_limited=limited,
            rate_has_room=room,
            hooks=retry_hooks.registered(),
        )
        step = next_step(end, outage, view, now=float(number))
        if isinstance(step, GiveUp):
            raise step.error
        outage = step.outage
    raise AssertionError("the run did not give up")


@case(
    "ReconnectFailedError",
    happened=("gave up reconnecting",),
    to_do=("check the network and the service status",),
)
def attempts_spent(monkeypatch: pytest.MonkeyPatch) -> None:
    policy = ResumePolicy(max_attempts=1, first_attempt_jitter=0.0)
    _give_up([_drop(1011, answered=True), _drop(1011, at_connect=True)], policy=policy)


@case("ReconnectFailedError", happened=("retry hook",), to_do=("check the hook", "remove it"))
def a_hook_gave_up(monkeypatch: pytest.MonkeyPatch) -> None:
    def never(drop: Any, attempt: int) -> bool:
        return False

    remove = adk_live_resume.on_retry(never)
    try:
        _give_up([_drop(1011, answered=True)])
    finally:
        remove()


@case(
    "ReconnectFailedError",
    happened=("gave up recovering the stalled live session",),
    to_do=("check the service status",),
)
def stall_recoveries_spent(monkeypatch: pytest.MonkeyPatch) -> None:
    answered = dataclasses.replace(STALL, answered=True)
    _give_up([answered, STALL], policy=ResumePolicy(max_attempts=1))


@case(
    "ReconnectFailedError",
    happened=("keeps dropping the live connection",),
    to_do=("check the service status",),
)
def too_many_reconnects(monkeypatch: pytest.MonkeyPatch) -> None:
    _give_up([_drop(1011, reason=QUOTA, answered=True)], room=False)


@case(
    "SessionNotResumableError",
    happened=("ended the session", "reconnect cannot fix"),
    to_do=("check the model name",),
)
def a_close_no_resume_fixes(monkeypatch: pytest.MonkeyPatch) -> None:
    _give_up([_drop(1008, reason="x" * 300, answered=True)])


@case(
    "SessionNotResumableError",
    happened=("refused the fresh session's handle",),
    to_do=("start a new run",),
)
def a_handle_refused_again(monkeypatch: pytest.MonkeyPatch) -> None:
    refused = _drop(1008, at_connect=True, resumed=True, reason="Invalid resumption handle")
    _give_up([_drop(1011, answered=True), refused, _drop(1011), refused])


@case(
    "SessionLimitError",
    happened=("15-minute limit",),
    to_do=("set ResumePolicy(sliding_window=True)",),
)
def an_audio_session_past_its_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    policy = ResumePolicy(fresh_start_when_handle_dead=False)
    end = _drop(1007, at_connect=True, resumed=True, reason="Request contains an invalid argument.")
    _give_up([end], policy=policy, limited=True)


@case("QuotaExceededError", happened=("quota is spent",), to_do=("check the plan and billing",))
def a_spent_quota_confirmed(monkeypatch: pytest.MonkeyPatch) -> None:
    _give_up([_drop(1011, reason=QUOTA, answered=True), _drop(1011, reason=QUOTA, resumed=True)])


@case(
    "IdleCloseError",
    happened=("closed the idle connection twice",),
    to_do=("send input sooner", "start a new run"),
)
def idle_closes_in_a_row(monkeypatch: pytest.MonkeyPatch) -> None:
    _give_up([_drop(1008, reason="", quiet=151.0), _drop(1008, reason="", quiet=4.0)])


@case("PoisonedSessionError", happened=("dies before any answer",), to_do=("retry later",))
def a_conversation_that_dies_however_connected(monkeypatch: pytest.MonkeyPatch) -> None:
    died = _drop(1011, reason="Internal error encountered.", resumed=True)
    fresh = dataclasses.replace(died, resumed=False)
    _give_up([_drop(1011, answered=True), died, died, fresh])


@case("ModelRefusedError", happened=("refuses every setup",), to_do=("check its name",))
def a_model_refused_at_every_setup(monkeypatch: pytest.MonkeyPatch) -> None:
    refused = _drop(1011, at_connect=True, reason="Internal error encountered.")
    _give_up([refused, refused], handle=False)


@case(
    "SessionStalledError",
    happened=("stalled twice; a fresh session brought no answer",),
    to_do=("check the service status",),
)
async def a_stall_nothing_recovers(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stall on the very first turn (no handle yet: only a fresh session is tried)."""
    async with FakeLiveServer() as server:
        server.script(Fault.stall(), connection=1)
        server.script(Fault.stall(), connection=2)
        agent = ResumableLlmAgent(
            name="assistant", model=server.gemini(), resume_policy=ResumePolicy(stall_timeout=0.5)
        )
        live = await LiveDriver.start(agent)
        live.send_text("hello")
        error = await live.wait_ended(timeout=30)
    assert error is not None
    raise error


@case(
    "NoLiveRunError",
    happened=("no live run serves this liverequestqueue",),
    to_do=("pass the queue given to runner.run_live",),
)
def a_move_asked_of_a_queue_no_run_serves(monkeypatch: pytest.MonkeyPatch) -> None:
    from google.adk.agents.live_request_queue import LiveRequestQueue

    adk_live_resume.request_move(LiveRequestQueue(), "the model keeps refusing")


# ---- installing and configuring ----------------------------------------------------------------


@case(
    "UnsupportedAdkVersionError",
    happened=("needs google-adk >=",),
    to_do=("upgrade it", "strict=false"),
)
def an_older_adk(monkeypatch: pytest.MonkeyPatch) -> None:
    adk_compat.check_supported_version("1.20.0")


@case(
    "UnsupportedAdkVersionError",
    happened=("lacks what adk-live-resume needs",),
    to_do=("install a tested release",),
)
def an_adk_without_the_live_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    from google.adk.flows.llm_flows.base_llm_flow import BaseLlmFlow

    monkeypatch.setattr(adk_compat, "adk_version", lambda: "9.9.9")
    monkeypatch.setattr(adk_compat, "_live_flow_module", lambda: None)
    for name in ("_send_to_model", "_receive_from_model"):
        monkeypatch.delattr(BaseLlmFlow, name, raising=False)
    adk_compat._detect()


@case("HandleKeyError", happened=("needs a key",), to_do=("set ADK_LIVE_RESUME_HANDLE_KEY",))
def no_sealing_key(monkeypatch: pytest.MonkeyPatch) -> None:
    HandleSealer.from_environment({})


@case("HandleKeyError", happened=("is not a Fernet key",), to_do=("make one",))
def a_bad_sealing_key(monkeypatch: pytest.MonkeyPatch) -> None:
    HandleSealer.from_environment({"ADK_LIVE_RESUME_HANDLE_KEY": "not-a-key"})


OWNER = SessionKey("app", "user", "session-1")


@case(
    "StoredHandleError",
    happened=("sealed with a key not in",),
    to_do=("give every worker the same keys",),
)
def a_handle_sealed_with_another_key(monkeypatch: pytest.MonkeyPatch) -> None:
    token = HandleSealer([Fernet.generate_key()]).seal(ResumeHandle(HANDLE, 1.0), OWNER, "a")
    HandleSealer([Fernet.generate_key()]).open(token, OWNER)


@case(
    "StoredHandleError",
    happened=("sealed for another session",),
    to_do=("do not copy",),
)
def a_copied_handle(monkeypatch: pytest.MonkeyPatch) -> None:
    sealer = HandleSealer([Fernet.generate_key()])
    token = sealer.seal(ResumeHandle(HANDLE, 1.0), OWNER, "a")
    sealer.open(token, SessionKey("app", "user", "session-2"))


@case("StoredHandleError", happened=("not a sealed handle",), to_do=("leave the session state",))
def not_a_handle(monkeypatch: pytest.MonkeyPatch) -> None:
    HandleSealer([Fernet.generate_key()]).open(42, OWNER)


@case(
    "StoredHandleError",
    happened=("unknown layout",),
    to_do=("run the same adk-live-resume",),
)
def a_handle_of_an_unknown_layout(monkeypatch: pytest.MonkeyPatch) -> None:
    key = Fernet.generate_key()
    HandleSealer([key]).open(Fernet(key).encrypt(b'{"v": 99}').decode(), OWNER)


@case("ConfigError", happened=("must be an integer",), to_do=("must be an integer",))
def a_bad_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    resolve_policy({"ADK_LIVE_RESUME_MAX_ATTEMPTS": "many"})


@case("ConfigError", happened=("not valid json",), to_do=("give a json object",))
def a_bad_policy_json(monkeypatch: pytest.MonkeyPatch) -> None:
    resolve_policy({}, policy_json="{max_attempts: 3")


@case("ConfigError", happened=("unknown resumepolicy field",), to_do=("known:",))
def an_unknown_field(monkeypatch: pytest.MonkeyPatch) -> None:
    resolve_policy({}, policy_json='{"max_attempt": 3}')


@case("ConfigError", happened=("invalid resumepolicy",), to_do=("must be > 0",))
def an_invalid_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    resolve_policy({}, policy_json='{"close_timeout": 0}')


@case("ConfigError", happened=("comes after the command",), to_do=("put adk-live-resume's",))
def a_launcher_option_after_the_command(monkeypatch: pytest.MonkeyPatch) -> None:
    split_argv(["adk", "web", "--max-attempts", "3"])


@case("ConfigError", happened=("command not found",), to_do=("check its name and path",))
def an_unknown_command(monkeypatch: pytest.MonkeyPatch) -> None:
    plan_launch(None, ["no-such-command-anywhere"])


@case("InjectSpecError", happened=("is not a number of seconds",), to_do=("expected",))
def a_bad_inject_spec(monkeypatch: pytest.MonkeyPatch) -> None:
    parse_inject_spec("stall-after=soon")


@case("CommandError", happened=("needs a code",), to_do=("such as 1011",))
def a_bad_proxy_command(monkeypatch: pytest.MonkeyPatch) -> None:
    action = parse_command("close soon")
    assert action is None


@case("PostgresUnavailable", happened=("not found",), to_do=("install postgresql",))
def no_postgres(monkeypatch: pytest.MonkeyPatch) -> None:
    from adk_live_resume.testing import postgres

    monkeypatch.delenv(postgres.BIN_ENV, raising=False)
    monkeypatch.setattr(glob, "glob", lambda pattern: [])
    monkeypatch.setenv("PATH", "")
    postgres.find_binaries()


@case("LiveRunEnded", happened=("run_live ended",), to_do=("queue was closed",))
async def a_test_waits_on_an_ended_run(monkeypatch: pytest.MonkeyPatch) -> None:
    async with FakeLiveServer() as server:
        agent = ResumableLlmAgent(name="assistant", model=server.gemini())
        live = await LiveDriver.start(agent)
        assert await live.close() is None
        await live.say("anyone there?", timeout=5)


@case("LifecycleError", happened=("cannot come in connected",), to_do=("please report it",))
def lifecycle_fed_an_event_its_state_cannot_take(_: pytest.MonkeyPatch) -> None:
    from adk_live_resume.rules.connection_state import ConnectionState

    ConnectionState().ahead_started(True)  # (only a move under way waits for the answer)


# ---- the checks --------------------------------------------------------------------------------


def test_every_exception_class_has_a_case_or_a_reason() -> None:
    found = exception_classes()
    covered = {c.cls for c in CASES} | set(NOT_RAISED)
    missing = {name: where for name, where in found.items() if name not in covered}
    assert not missing, (
        "add a case to tests/repo/test_error_messages.py that raises each of these through the"
        f" package's own code (or a reason to NOT_RAISED): {missing}"
    )
    assert {c.cls for c in CASES} | set(NOT_RAISED) <= set(found)


def test_what_is_listed_as_never_raised_is_never_made() -> None:
    made = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                made.add(node.func.id)
    assert made & set(NOT_RAISED) == {"ConnectionRetired"}  # (made, and consumed inside)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.cls}-{c.name}")
async def test_the_first_120_bytes_say_what_happened_and_what_to_do(
    case: Case, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(BaseException) as raised:
        result = case.provoke(monkeypatch)
        if inspect.isawaitable(result):
            await result
    error = raised.value
    assert type(error).__name__ == case.cls, f"{case.name} raised {error!r}"
    message = str(error)
    first = message.encode()[:FIRST].decode(errors="ignore").lower()
    assert any(word.lower() in first for word in case.happened), (
        f"what happened is not in the first {FIRST} bytes: {first!r}"
    )
    assert any(word.lower() in first for word in case.to_do), (
        f"what to do is not in the first {FIRST} bytes: {first!r}"
    )
    assert HANDLE not in message  # (credentials never in a message)
