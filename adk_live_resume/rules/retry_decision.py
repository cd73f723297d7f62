"""The one answer to "after this drop, on this attempt: retry now, wait, or give up?".

Pure: no I/O, no clock, no state. :func:`decide` takes the drop (its kind, close code, HTTP
status and ``Retry-After``), the attempt it would make, how long the outage has lasted, whether
the run's reconnect rate has room, and an optional user hook, and returns a frozen
:class:`RetryDecision`. :func:`~.next_step.next_step` asks it for the wait
before every attempt after a drop, once per end. In the spirit of hynek's ``stamina``: caps
on attempts and on time, full jitter, a hook that may overrule the wait.

Guarantees:

* **Caps first.** A drop the policy never retries (``kind == "rejected"``, a close code outside
  ``retryable_close_codes``), attempt ``max_attempts + 1``, an outage of ``outage_timeout``
  seconds or a full reconnect rate always give up; no hook can retry past them.
* **A missed goAway deadline is a drop like any other.** A close with
  :data:`GO_AWAY_DEADLINE_CODE` (1008) on a connection that had received a ``goAway``
  (:attr:`Drop.after_go_away <adk_live_resume.rules.errors.Drop.after_go_away>`) is retryable
  whatever ``retryable_close_codes`` says: the service closes that way a connection whose
  client did not leave by the goAway's deadline (a recorded run, martin-paladino/glosa
  ``samples/fixtures/lt_en.jsonl``). A 1008 on a connection without a goAway stays not
  retryable (a wrong model, key or handle).
* **Now is a decision, not a draw.** :data:`NOW` is returned exactly when no wait is asked
  for: the policy's bound for this attempt is 0 (:meth:`ResumePolicy.wait_bound`: the first
  attempt without ``first_attempt_jitter``, or ``initial_wait == 0``), the drop carries no
  ``Retry-After`` above 0 and the hook answered ``None`` or ``True``; or the hook answered 0.
  A jittered wait that happens to be 0 is a ``wait`` of 0 s, and so is the policy's backoff
  under :func:`~.policy.set_testing` (which turns the policy's backoff off, not
  a wait the server or the hook asked for), so "now" never depends on the random draw or on
  the testing switch.
* **Retry-After is honoured** (RFC 9110, section 10.2.3): the wait is at least the seconds
  the server asked for, even beyond ``max_wait`` (which bounds the policy's own backoff). When
  it would end past the outage's deadline (``outage_timeout`` after the drop), the decision
  gives up at once, saying so, instead of sleeping towards a certain failure. The same holds
  for a wait the hook asks for. The policy's own backoff is cut at the deadline, as before.
* **The hook** (``hook(drop, attempt)``) is asked only for a drop the caps allow; ``None``
  keeps the policy's decision, ``False`` gives up, ``True`` retries with the policy's wait, a
  number (seconds, >= 0 and finite) is the wait, raised to any ``Retry-After``. A hook that
  raises or answers anything else gives up with a reason naming it and carries its error
  (:attr:`RetryDecision.error`); it never propagates from here and never hangs the run.
"""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from .errors import Drop
from .policy import ResumePolicy

#: A user's retry hook: ``(drop, attempt) -> None | bool | seconds``.
RetryHook = Callable[[Drop, int], "bool | float | None"]

Action = Literal["now", "wait", "give_up"]
#: Why a decision gave up (the loop picks the error from it).
GiveUpCause = Literal["not_retryable", "attempts", "outage_timeout", "rate", "hook"]


@dataclass(frozen=True)
class RetryDecision:
    """What to do after a drop: :attr:`action` ``"now"``, ``"wait"`` (:attr:`seconds`) or
    ``"give_up"`` (:attr:`cause`, :attr:`why`; :attr:`error` when a hook raised);
    :attr:`by_hook`: a hook's answer (not ``None``) made it."""

    action: Action
    seconds: float = 0.0
    cause: GiveUpCause | None = None
    why: str = ""
    error: BaseException | None = None
    by_hook: bool = False

    @property
    def now(self) -> bool:
        """The next attempt goes without any wait (see the module's guarantees)."""
        return self.action == "now"

    @property
    def retries(self) -> bool:
        """Another attempt follows (now or after :attr:`seconds`)."""
        return self.action != "give_up"


#: Retry at once.
NOW = RetryDecision("now")


def wait(seconds: float, *, by_hook: bool = False) -> RetryDecision:
    """Retry after ``seconds``."""
    return RetryDecision("wait", seconds=seconds, by_hook=by_hook)


def give_up(cause: GiveUpCause, why: str, error: BaseException | None = None) -> RetryDecision:
    """Stop retrying, because of ``cause``; ``why`` says it in words."""
    return RetryDecision("give_up", cause=cause, why=why, error=error, by_hook=cause == "hook")


#: The close code the service ends a connection with when its client missed the goAway's
#: deadline: "Connection aborted because the client failed to close the connection after
#: receiving a GoAway signal ..." (a recorded run, ``gemini-live-protocol.md``, "Field facts").
GO_AWAY_DEADLINE_CODE = 1008


def retryable(drop: Drop, policy: ResumePolicy) -> bool:
    """Whether the policy ever retries after ``drop`` (caps aside)."""
    if drop.kind == "rejected":
        return False
    if drop.kind != "closed" or missed_go_away_deadline(drop):
        return True
    return policy.is_retryable_code(drop.code)


def missed_go_away_deadline(drop: Drop) -> bool:
    """``drop`` is the service's close of a connection whose client missed the deadline of the
    ``goAway`` it had received (:data:`GO_AWAY_DEADLINE_CODE` after a goAway)."""
    return drop.kind == "closed" and drop.after_go_away and drop.code == GO_AWAY_DEADLINE_CODE


def seen_after_go_away(drop: Drop, go_away: bool) -> Drop:
    """``drop`` as lost by a connection that had received a ``goAway`` (``go_away``) or not."""
    return dataclasses.replace(drop, after_go_away=True) if go_away else drop


def decide(
    drop: Drop,
    attempt: int,
    *,
    policy: ResumePolicy,
    elapsed: float = 0.0,
    rate_has_room: bool = True,
    hooks: tuple[RetryHook, ...] = (),
    testing: bool = False,
    retried_by_class: bool = False,
    rng: random.Random | None = None,
) -> RetryDecision:
    """Decide about connection attempt ``attempt`` (1-based within the outage) after ``drop``.

    ``elapsed``: seconds since the outage began (0 for its first drop). ``rate_has_room``:
    ``max_reconnects_per_minute`` allows one more reconnect. ``hooks``: asked in order, the
    first answer that is not ``None`` counts. ``testing``: the policy's backoff is 0 s (still a
    ``wait``), except what the server or the hook asked for. ``retried_by_class``: a
    failure class retries this drop (:mod:`.failure_classes`: a refused handle's fresh start,
    an idle close's resume), so a close code the policy does not retry does not end the run.
    ``rng``: the jitter's source.
    """
    if not retried_by_class and not retryable(drop, policy):
        return give_up("not_retryable", f"{_describe(drop)} is not retryable")
    if attempt > policy.max_attempts:
        return give_up("attempts", f"{attempt - 1} connection attempts failed")
    if elapsed >= policy.outage_timeout:
        return give_up("outage_timeout", f"still disconnected after {elapsed:.1f} s")
    if not rate_has_room:
        return give_up(
            "rate", f"more than {policy.max_reconnects_per_minute} reconnects within 60 s"
        )
    answer: bool | float | None = None
    for hook in hooks:
        try:
            answer = hook(drop, attempt)
        except Exception as error:  # a bug in the user's hook: stop, saying so
            return give_up(
                "hook",
                f"the retry hook {_name(hook)} raised {type(error).__name__}: {error}",
                error,
            )
        if answer is not None:
            problem = _bad_answer(answer)
            if problem:
                return give_up("hook", f"the retry hook {_name(hook)} {problem}")
            break
    if answer is False:
        return give_up("hook", f"the retry hook {_name(hook)} gave up on attempt {attempt}")
    remaining = max(0.0, policy.outage_timeout - elapsed)
    server_asks = drop.retry_after or 0.0
    hook_asks = None if answer is None or answer is True else float(answer)
    asked = max(server_asks, hook_asks or 0.0)
    by_hook = answer is not None
    if hook_asks is not None:
        if asked == 0:
            return RetryDecision("now", by_hook=True)
    elif not asked and not policy.wait_bound(attempt):
        return RetryDecision("now", by_hook=True) if by_hook else NOW
    if asked > remaining:
        who = "the server (Retry-After)" if asked == server_asks else "the retry hook"
        return give_up(
            "outage_timeout",
            f"{who} asked to wait {asked:g} s, past the outage's deadline"
            f" ({remaining:.1f} s of outage_timeout={policy.outage_timeout:g} s left)",
        )
    if hook_asks is not None or testing:
        return wait(asked, by_hook=by_hook)  # (no backoff of the policy's own)
    return wait(max(asked, min(_backoff(policy, attempt, rng), remaining)), by_hook=by_hook)


def _backoff(policy: ResumePolicy, attempt: int, rng: random.Random | None) -> float:
    """The policy's full-jitter backoff for ``attempt`` (its upper bound with jitter off)."""
    cap = policy.wait_bound(attempt)
    if not cap:
        return 0.0
    if attempt > 1 and not policy.jitter:
        return cap
    return (rng or random).uniform(0.0, cap)


def _bad_answer(answer: object) -> str:
    """What is wrong with a hook's answer ("" if nothing)."""
    if isinstance(answer, bool):
        return ""
    if not isinstance(answer, (int, float)):
        return f"answered {answer!r}: expected None, True, False or a number of seconds"
    if not math.isfinite(answer) or answer < 0:
        return f"answered {answer!r} seconds: a wait must be finite and >= 0"
    return ""


def _name(hook: RetryHook) -> str:
    return str(getattr(hook, "__qualname__", None) or repr(hook))


def _describe(drop: Drop) -> str:
    if drop.code is not None:
        return f"close code {drop.code}"
    if drop.status is not None:
        return f"HTTP {drop.status}"
    return drop.reason or drop.kind
