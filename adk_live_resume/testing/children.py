"""Child processes of tests that cannot outlive them: each in a process group of its own, reaped.

:func:`spawn` starts a child in a new session (so a process group of its own, which
:func:`reap` kills whole) and registers it; on Linux the child also gets a parent-death
signal (``prctl(PR_SET_PDEATHSIG)``), so it goes even when this process is killed with
SIGKILL and nothing here runs. :func:`reap` stops a child's group (its signal, a short wait,
then SIGKILL) and waits for it. Every child this process spawned and has not reaped is reaped
at interpreter exit (``atexit``). :func:`exit_on_sigterm` turns SIGTERM into the orderly
exit of Ctrl-C (``KeyboardInterrupt``), so fixture finalisers run; the pytest plugin installs
it. :func:`die_with_parent` gives the calling process itself a parent-death signal: the
plugin sends a pytest-xdist worker SIGTERM when its controller ends, however it ends (a worker
whose controller was SIGKILLed otherwise sleeps on in a test's wait, its children with it).

Guarantees, on Linux: a spawned child is signalled when this process ends, however it ends
(exit, exception, SIGTERM, SIGKILL), or when the thread that forked it ends; :func:`spawn`
forks from the main thread or, called from any other thread, from a daemon thread that lives
as long as the process, so a child never dies with a short-lived thread. The signal is set
after ``user=`` / ``group=`` take effect (a change of credentials clears it) and after the
caller's ``preexec_fn``; a child whose parent died before the signal was set kills itself.
Off Linux there is no parent-death signal: process groups, :func:`reap` and ``atexit`` only.
A child's own descendants that leave its process group (``setsid``, as PostgreSQL's backends
do) are its business: the parent-death signal reaches the child alone.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import concurrent.futures

__all__ = [
    "busy_processes",
    "die_with_parent",
    "exit_on_sigterm",
    "live",
    "reap",
    "reap_all",
    "spawn",
]

_PR_SET_PDEATHSIG = 1

_lock = threading.Lock()
#: pid -> (the child, the signal that stops it); only this process's own children.
_children: dict[int, tuple[subprocess.Popen[Any], int]] = {}
_spawner: queue.SimpleQueue[tuple[Callable[[], Any], concurrent.futures.Future[Any]]] | None
_spawner = None
_prctl: Callable[..., int] | None = None
_prctl_looked_up = False


def _libc_prctl() -> Callable[..., int] | None:
    """libc's ``prctl`` (looked up once, before any fork), or None off Linux."""
    global _prctl, _prctl_looked_up
    if not _prctl_looked_up:
        _prctl_looked_up = True
        if sys.platform.startswith("linux"):
            import ctypes

            with contextlib.suppress(OSError, AttributeError):
                _prctl = ctypes.CDLL(None, use_errno=True).prctl
    return _prctl


def _set_death_signal(prctl: Callable[..., int], signum: int, parent: int) -> None:
    """In a child (or a process on itself): ``signum`` when the parent ends; if the parent
    has already gone (``parent`` is no longer our parent), that signal now."""
    prctl(_PR_SET_PDEATHSIG, int(signum), 0, 0, 0)
    if os.getppid() != parent:
        os.kill(os.getpid(), signum)


def die_with_parent(signum: int = signal.SIGTERM) -> bool:
    """Have this process sent ``signum`` when its parent (the thread that forked it) ends;
    returns whether that is in force (False off Linux). If the parent has already gone, the
    signal comes at once."""
    prctl = _libc_prctl()
    if prctl is None:
        return False
    _set_death_signal(prctl, signum, os.getppid())
    return True


def _spawner_loop(
    jobs: queue.SimpleQueue[tuple[Callable[[], Any], concurrent.futures.Future[Any]]],
) -> None:
    while True:
        job, future = jobs.get()
        try:
            future.set_result(job())
        except BaseException as error:  # handed to the caller's thread
            future.set_exception(error)


def _in_long_lived_thread(job: Callable[[], subprocess.Popen[Any]]) -> subprocess.Popen[Any]:
    """Run ``job`` (a fork) in the main thread or the spawner thread, never in a thread that
    may end before the child should."""
    global _spawner
    if threading.current_thread() is threading.main_thread():
        return job()
    import concurrent.futures

    with _lock:
        if _spawner is None:
            _spawner = queue.SimpleQueue()
            threading.Thread(
                target=_spawner_loop,
                args=(_spawner,),
                name="adk_live_resume children",
                daemon=True,
            ).start()
        jobs = _spawner
    future: concurrent.futures.Future[subprocess.Popen[Any]] = concurrent.futures.Future()
    jobs.put((job, future))
    return future.result()


def spawn(
    argv: Sequence[str], *, death_signal: int = signal.SIGTERM, **popen_kwargs: Any
) -> subprocess.Popen[Any]:
    """Start ``argv`` (``subprocess.Popen`` with ``popen_kwargs``) in a new session, registered
    for :func:`reap` and the exit hook. ``death_signal`` is what stops it: sent to its process
    group by :func:`reap`, and on Linux to the child itself when this process (or the thread
    that forked it) ends (SIGQUIT for a PostgreSQL server: its immediate shutdown).

    ``start_new_session`` and ``process_group`` are not accepted (the new session is the
    point); a ``preexec_fn`` runs first, then the parent-death signal is set."""
    for refused in ("start_new_session", "process_group"):
        if refused in popen_kwargs:
            raise TypeError(f"spawn always starts a new session; {refused}= is not accepted")
    theirs: Callable[[], Any] | None = popen_kwargs.pop("preexec_fn", None)
    prctl = _libc_prctl()
    parent = os.getpid()

    def in_child() -> None:
        if theirs is not None:
            theirs()
        if prctl is not None:
            _set_death_signal(prctl, death_signal, parent)

    preexec = in_child if (prctl is not None or theirs is not None) else None

    def start() -> subprocess.Popen[Any]:
        proc = subprocess.Popen(
            list(argv), start_new_session=True, preexec_fn=preexec, **popen_kwargs
        )
        with _lock:
            _children[proc.pid] = (proc, int(death_signal))
        return proc

    return _in_long_lived_thread(start)


def live() -> list[subprocess.Popen[Any]]:
    """The children :func:`spawn` started in this process and :func:`reap` has not reaped."""
    with _lock:
        return [proc for proc, _ in _children.values()]


def _signal_group(pid: int, signum: int) -> None:
    """``signum`` to the process group ``pid`` leads, or to ``pid`` alone when it leads none
    (a process :func:`spawn` did not start). Only called while ``pid`` is not reaped."""
    try:
        os.killpg(pid, signum)
    except ProcessLookupError:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signum)
    except PermissionError:
        pass


def _wait_unreaped(proc: subprocess.Popen[Any], timeout: float) -> None:
    """Wait up to ``timeout`` s for ``proc`` to exit without reaping it: its pid (so its
    process group id) stays reserved by the zombie until :func:`reap` sends the last SIGKILL."""
    deadline = time.monotonic() + timeout
    waitid = getattr(os, "waitid", None)
    while time.monotonic() < deadline:
        if waitid is None:  # pragma: no cover - only where the OS has no waitid
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            return
        try:
            if waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                return
        except ChildProcessError:  # reaped elsewhere
            return
        time.sleep(0.02)


def reap(proc: subprocess.Popen[Any], signum: int | None = None, grace: float = 5.0) -> None:
    """Stop ``proc``'s process group and wait for ``proc``; never raises.

    ``signum`` (default: the child's ``death_signal``; SIGTERM for a process :func:`spawn`
    did not start) goes to the whole group; whatever of the group is left when ``proc`` has
    exited or ``grace`` seconds have passed gets SIGKILL, then ``proc`` is reaped. Safe to
    call again and on a child that already exited. The group is signalled only while ``proc``
    is not yet reaped, so its id cannot belong to an unrelated process."""
    _reap(proc, signum, grace, send=True)


def _reap(proc: subprocess.Popen[Any], signum: int | None, grace: float, *, send: bool) -> None:
    with _lock:
        entry = _children.get(proc.pid)
    if signum is None:
        signum = entry[1] if entry is not None and entry[0] is proc else signal.SIGTERM
    try:
        if proc.returncode is None:
            if send:
                _signal_group(proc.pid, signum)
            _wait_unreaped(proc, grace)
            _signal_group(proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)
    except OSError:
        pass
    finally:
        with _lock:
            if _children.get(proc.pid, (None, 0))[0] is proc:
                del _children[proc.pid]


@contextlib.contextmanager
def busy_processes(count: int) -> Iterator[list[subprocess.Popen[Any]]]:
    """``count`` children (:func:`spawn`) that spin on the CPU for the duration of the block,
    then are killed (:func:`reap`): a busy machine, whose slow event loop opens the windows
    between connections that an idle one hides. Yields the children."""
    spinners: list[subprocess.Popen[Any]] = []
    try:
        for _ in range(count):
            spinners.append(spawn([sys.executable, "-c", "while True: pass"]))
        yield spinners
    finally:
        for spinner in spinners:
            reap(spinner, signal.SIGKILL)


def reap_all(grace: float = 5.0) -> None:
    """Reap every child this process spawned and has not reaped (the exit hook); never raises.
    All are signalled first, then each is waited for, so the graces do not add up."""
    with _lock:
        children = list(_children.values())
    for proc, signum in children:
        if proc.returncode is None:
            _signal_group(proc.pid, signum)
    deadline = time.monotonic() + grace
    for proc, signum in children:
        _reap(proc, signum, max(0.0, deadline - time.monotonic()), send=False)


def _forget_in_forked_child() -> None:
    """A forked child owns none of its parent's children (and must not reap them at exit)."""
    global _lock, _spawner
    _lock = threading.Lock()
    _children.clear()
    _spawner = None


os.register_at_fork(after_in_child=_forget_in_forked_child)
atexit.register(reap_all)


def exit_on_sigterm() -> Callable[[], None]:
    """Make SIGTERM end this process as Ctrl-C does: the first raises ``KeyboardInterrupt``
    in the main thread (pytest then runs its finalisers and exits), a second one during that
    shutdown ends the process at once (children still get their parent-death signal).
    Returns a function that puts the previous handler back. Does nothing (and returns a
    no-op) off the main thread or where another SIGTERM handler is already installed."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = signal.getsignal(signal.SIGTERM)
    if previous is not signal.SIG_DFL:
        return lambda: None
    received: list[int] = []

    def on_sigterm(signum: int, frame: object) -> None:
        if received:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
            return
        received.append(signum)
        raise KeyboardInterrupt("SIGTERM")

    signal.signal(signal.SIGTERM, on_sigterm)

    def restore() -> None:
        if signal.getsignal(signal.SIGTERM) is on_sigterm:
            signal.signal(signal.SIGTERM, previous)

    return restore
