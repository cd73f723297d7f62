"""Zero-code launcher: run an ADK app with the resumable live loop, without editing it.

In the style of ``opentelemetry-instrument``::

    adk-live-resume adk web ./agents            # a console script of this environment
    adk-live-resume python app.py --port 8080   # any command
    adk-live-resume app.py                      # a Python file
    python -m adk_live_resume -m mypkg.server   # a module, like python -m
    adk-live-resume --max-attempts 5 --go-away-margin 10 adk api_server
    adk-live-resume --inject goaway-every=60,drop-every=90 adk web ./agents  # rehearse faults

How the patch reaches the code (both at once, so it holds for whole process trees):

* **In this process.** ``-m MODULE``, a ``*.py`` file and a console script installed in the
  same environment as adk-live-resume (``adk``, ``uvicorn``...) run right here, after
  :func:`adk_live_resume.install`, through :mod:`runpy` or the script's entry point. No
  second interpreter, no dependence on start-up hooks.
* **In every child Python process.** The launcher puts ``adk_live_resume/launch/_bootstrap`` first
  on ``PYTHONPATH`` and the chosen policy in ``ADK_LIVE_RESUME_BOOTSTRAP_POLICY``. Its
  ``sitecustomize`` costs nothing at start-up: it waits until the process imports
  ``google.adk`` and installs the patch at that moment (processes that never import ADK are
  not touched). Any other ``sitecustomize`` on the path still runs. This covers reloaders and
  worker processes (``adk web --reload``, uvicorn workers, multiprocessing) and commands that
  are not Python themselves (a shell script that starts ``python``). Every other command is
  started that way (``exec``), ``python``/``python3`` meaning the interpreter
  adk-live-resume runs in.

Policy: flags, ``--policy-json``, or ``ADK_LIVE_RESUME_*`` environment variables, flags
winning; names and precedence are in :mod:`adk_live_resume.launch.config`. ``--no-strict`` (or
``ADK_LIVE_RESUME_STRICT=0``) also tries a google-adk release older than the supported
minimum; newer, untested releases are always tried, after a WARNING.

If your code also calls ``install()`` itself, the first install wins: the launcher's policy
is kept and the app's call, if it asks for a different policy, logs a WARNING naming both
(as OpenTelemetry instrumentors do). Nothing crashes.

This module imports nothing heavy at import time: the bootstrap imports it in child processes.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import os
import runpy
import shutil
import sys
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ..rules.policy import ResumePolicy
from .config import (
    BOOTSTRAP_POLICY_ENV,
    ENV_PREFIX,
    NONE_WORD,
    POLICY_JSON_ENV,
    STRICT_ENV,
    ConfigError,
    coerce,
    default_policy,
    field_kind,
    flag_for,
    is_optional,
    policy_from_json,
    policy_to_json,
    resolve_policy,
    strict_from,
)

if TYPE_CHECKING:
    from ..fault_proxy.inject_spec import InjectSchedule

__all__ = [
    "BOOTSTRAP_DIR",
    "BOOTSTRAP_POLICY_ENV",
    "ENV_PREFIX",
    "POLICY_JSON_ENV",
    "PROG",
    "STRICT_ENV",
    "Launch",
    "LauncherError",
    "bootstrap_environment",
    "build_parser",
    "install_from_environment",
    "main",
    "plan_launch",
    "policy_to_json",
    "resolve_policy",
    "split_argv",
    "strict_from",
]

PROG = "adk-live-resume"
#: The directory whose ``sitecustomize.py`` patches child processes.
BOOTSTRAP_DIR = Path(__file__).resolve().parent / "_bootstrap"

#: A usage or configuration problem: reported on stderr, exit status 2.
LauncherError = ConfigError

#: Policy fields that have a flag of their own (``--max-attempts``...): (field, help). The
#: flag's name, value type, default and how it takes ``none`` come from the field itself
#: (:func:`adk_live_resume.launch.config.flag_for`, :func:`adk_live_resume.launch.config.coerce`).
_FLAGS: tuple[tuple[str, str], ...] = (
    ("max_attempts", "connection attempts per outage"),
    (
        "go_away_margin",
        "after goAway, reconnect at the latest this many seconds before the deadline",
    ),
    (
        "outage_timeout",
        "longest outage, from the drop to a healthy connection, before giving up",
    ),
    ("max_reconnects_per_minute", "reconnects allowed in any 60 s window of one run"),
    ("connect_timeout", "seconds for the websocket to open and the setup to be answered"),
)
_SWITCHES = frozenset({"-h", "--help", "--no-strict", "-v", "--verbose", "--version"})


def _value_options() -> frozenset[str]:
    """Launcher options that take a value."""
    return frozenset({"--policy-json", "--inject", *(flag_for(name) for name, _ in _FLAGS)})


def _late_options() -> frozenset[str]:
    """Launcher options that are caught when they follow the command (:func:`split_argv`)."""
    return frozenset({*_value_options(), "--no-strict"})


# ---- child processes -------------------------------------------------------------------------


def bootstrap_environment(
    environ: MutableMapping[str, str], policy: ResumePolicy, *, strict: bool
) -> None:
    """Make every Python process started with ``environ`` install ``policy`` on import of ADK."""
    entries = [p for p in environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    bootstrap = str(BOOTSTRAP_DIR)
    environ["PYTHONPATH"] = os.pathsep.join([bootstrap, *(p for p in entries if p != bootstrap)])
    environ[BOOTSTRAP_POLICY_ENV] = policy_to_json(policy)
    environ[STRICT_ENV] = "1" if strict else "0"


def install_from_environment(environ: Mapping[str, str] | None = None) -> None:
    """Install with the policy the launcher passed down (or the environment's): the bootstrap
    ``sitecustomize`` calls this once the process has imported ``google.adk``. That policy
    was resolved from the same ``ADK_LIVE_RESUME_*`` variables, so none is reported as
    ignored."""
    from .patch import install_resolved

    environ = os.environ if environ is None else environ
    handed_down = environ.get(BOOTSTRAP_POLICY_ENV)
    if handed_down:
        policy = policy_from_json(handed_down, BOOTSTRAP_POLICY_ENV)
    else:
        policy = resolve_policy(environ)
    install_resolved(policy, strict=strict_from(environ))


# ---- the command -----------------------------------------------------------------------------


LaunchKind = Literal["module", "script", "console_script", "exec"]


@dataclass(frozen=True)
class Launch:
    """How the command runs: here (module, script, console script) or exec'd."""

    kind: LaunchKind
    #: module name, script path, entry point ``module:attr``, or the executable's path
    target: str
    #: ``sys.argv`` for the command (``argv[0]`` included)
    argv: tuple[str, ...]

    @property
    def in_process(self) -> bool:
        return self.kind != "exec"


def split_argv(argv: Sequence[str]) -> tuple[list[str], str | None, list[str]]:
    """Split into (launcher options, ``-m`` module or None, the command and its arguments).

    Options end at the first word that is not one of ours, at ``--``, or at ``-m MODULE``.
    A policy option of ours that follows the command (``adk-live-resume adk api_server
    --max-attempts 5``) is an error that says to move it before the command: the command
    would otherwise receive it and fail on it. ``--`` before the command passes such words
    to the command untouched.
    """
    options: list[str] = []
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--":
            return options, None, list(argv[i + 1 :])
        if word == "-m":
            if i + 1 >= len(argv):
                raise LauncherError("-m needs a module name")
            return options, argv[i + 1], _no_late_options(argv[i + 1 :])[1:]
        if word.startswith("-m") and not word.startswith("--"):
            return options, word[2:], _no_late_options([word[2:], *argv[i + 1 :]])[1:]
        name = word.split("=", 1)[0]
        if name in _value_options():
            if "=" in word:
                options.append(word)
                i += 1
                continue
            if i + 1 >= len(argv):
                raise LauncherError(f"{word} needs a value")
            options += [word, argv[i + 1]]
            i += 2
            continue
        if word in _SWITCHES:
            options.append(word)
            i += 1
            continue
        if word.startswith("-"):
            raise LauncherError(f"unknown option {word} (put the command after --)")
        return options, None, _no_late_options(argv[i:])
    return options, None, []


def _no_late_options(command: Sequence[str]) -> list[str]:
    """``command`` as a list, or a :class:`LauncherError` if a launcher option follows it."""
    for word in command[1:]:
        name = word.split("=", 1)[0]
        if name in _late_options():
            raise LauncherError(
                f"{name} comes after the command {command[0]!r}, which would receive it; "
                f"put {PROG}'s options before the command ({PROG} {name} ... "
                f"{command[0]} ...), or put -- before the command to pass {name} to it"
            )
    return list(command)


def _python_names() -> set[str]:
    major, minor = sys.version_info[:2]
    return {"python", f"python{major}", f"python{major}.{minor}"}


def console_script(name: str) -> importlib.metadata.EntryPoint | None:
    """The ``console_scripts`` entry point ``name`` of this environment, if there is one."""
    for entry in importlib.metadata.entry_points(group="console_scripts"):
        if entry.name == name:
            return entry
    return None


def plan_launch(module: str | None, command: Sequence[str]) -> Launch:
    """Decide how to run the command (see the module docstring)."""
    if module is not None:
        return Launch("module", module, (module, *command))
    if not command:
        raise LauncherError(
            "no command given. Usage: adk-live-resume [OPTIONS] COMMAND [ARGS...] "
            "or python -m adk_live_resume [OPTIONS] -m MODULE [ARGS...]"
        )
    name, args = command[0], tuple(command[1:])
    if name.endswith(".py") and os.path.isfile(name):
        return Launch("script", name, (name, *args))
    if name in _python_names():
        return Launch("exec", sys.executable, (sys.executable, *args))
    if os.sep not in name and (os.altsep is None or os.altsep not in name):
        entry = console_script(name)
        if entry is not None:
            return Launch("console_script", entry.value, (shutil.which(name) or name, *args))
    path = shutil.which(name)
    if path is None:
        raise LauncherError(f"command not found: {name} (check its name and PATH)")
    return Launch("exec", path, (name, *args))


def _run_in_process(launch: Launch) -> int:
    sys.argv = list(launch.argv)
    if launch.kind == "module":
        cwd = os.getcwd()
        if not sys.path or sys.path[0] not in ("", cwd):
            sys.path.insert(0, cwd)
        try:
            found = importlib.util.find_spec(launch.target) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            raise LauncherError(
                f"no module named {launch.target} (check its name, and that it is installed)"
            )
        runpy.run_module(launch.target, run_name="__main__", alter_sys=True)
        return 0
    if launch.kind == "script":
        sys.path.insert(0, str(Path(launch.target).resolve().parent))
        runpy.run_path(launch.target, run_name="__main__")
        return 0
    entry = importlib.metadata.EntryPoint(name=launch.argv[0], value=launch.target, group="")
    result = entry.load()()
    if result is None or isinstance(result, int):
        return int(result or 0)
    print(result, file=sys.stderr)
    return 1


def _exec(launch: Launch) -> int:
    sys.stdout.flush()
    sys.stderr.flush()
    if os.name == "posix":
        os.execv(launch.target, list(launch.argv))  # never returns
    import subprocess  # pragma: no cover - Windows has no real exec

    return subprocess.call([launch.target, *launch.argv[1:]])  # pragma: no cover


def _child(launch: Launch) -> int:
    import subprocess

    return subprocess.call([launch.target, *launch.argv[1:]])


def _inject_schedule(spec: str | None) -> InjectSchedule | None:
    """``--inject``'s SPEC read, or a :class:`LauncherError` that says the accepted form."""
    if spec is None:
        return None
    from ..fault_proxy.inject_spec import InjectSpecError, parse_inject_spec

    try:
        return parse_inject_spec(spec)
    except InjectSpecError as error:
        raise LauncherError(str(error)) from None


# ---- command line ----------------------------------------------------------------------------


def _flag_value(name: str, flag: str) -> Callable[[str], str]:
    """An argparse ``type`` that checks a flag's text now and keeps it as typed.

    The text goes on to :func:`resolve_policy`, which reads it again: a ``none`` that sets
    an optional field to ``None`` stays apart from a flag that was not given.
    """

    def check(text: str) -> str:
        try:
            coerce(name, text, flag)
        except ConfigError as error:
            raise argparse.ArgumentTypeError(str(error).removeprefix(f"{flag}: ")) from None
        return text

    return check


def _shown(value: object, seconds: bool) -> str:
    """A flag's default as ``--help`` shows it: ``5 s``, ``8``, ``none``."""
    if value is None:
        return NONE_WORD
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{value:g}" + (" s" if seconds else "")
    return str(value)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        usage=(
            f"{PROG} [OPTIONS] COMMAND [ARGS...]\n"
            f"       python -m adk_live_resume [OPTIONS] -m MODULE [ARGS...]"
        ),
        description=(
            "Run an ADK app with adk_live_resume installed: its live (Gemini Live) sessions "
            "resume across dropped websockets and goAway, without changing its code. Console "
            "scripts of this environment, -m MODULE and *.py files run in this process; "
            "other commands are exec'd, and every Python process they start installs the "
            "patch when it imports google.adk. Options go BEFORE the command: "
            f"{PROG} --max-attempts 5 adk api_server."
        ),
        epilog=(
            "Environment: ADK_LIVE_RESUME_POLICY_JSON, ADK_LIVE_RESUME_<FIELD> for any "
            "ResumePolicy field (e.g. ADK_LIVE_RESUME_MAX_ATTEMPTS=5), "
            "ADK_LIVE_RESUME_STRICT=0. A field that may be None takes none "
            "(ADK_LIVE_RESUME_<FIELD>=none, --flag none, null in JSON). "
            "Precedence: defaults < POLICY_JSON < <FIELD> "
            "variables < --policy-json < flags. If the app also calls install() itself, "
            "the launcher's policy (installed first) is kept and the app's call logs a "
            "WARNING."
        ),
    )
    parser.add_argument(
        "--policy-json",
        metavar="JSON",
        help="any ResumePolicy fields as a JSON object, e.g. '{\"max_attempts\": 5}' "
        "(default: none; the flags below win over it)",
    )
    defaults = default_policy()
    for name, text in _FLAGS:
        flag = flag_for(name)
        seconds = field_kind(name) is float
        optional = is_optional(name)
        default = _shown(getattr(defaults, name), seconds)
        parser.add_argument(
            flag,
            dest=name,
            type=_flag_value(name, flag),
            metavar=("SECONDS" if seconds else "N") + (f"|{NONE_WORD}" if optional else ""),
            help=f"{text} (default {default}"
            + (f"; {NONE_WORD} sets it to None)" if optional else ")"),
        )
    parser.add_argument(
        "--inject",
        metavar="SPEC",
        help="rehearse faults: run a fault proxy in front of the Live endpoint the app uses "
        "and point the app at it, e.g. --inject goaway-every=60,drop-every=90 (seconds; "
        "keys in adk_live_resume.fault_proxy.inject_spec) (default: none)",
    )
    parser.add_argument(
        "--no-strict",
        action="store_true",
        help="also try google-adk releases older than the supported minimum (default: refuse "
        "them; newer, untested releases are always tried, with a warning)",
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="say on stderr what is run and how (default: quiet)",
    )
    parser.add_argument(
        "--version", action="store_true", help="print the version and exit (default: off)"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """``adk-live-resume`` / ``python -m adk_live_resume``; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    try:
        option_words, module, command = split_argv(argv)
        options = parser.parse_args(option_words)
        if options.version:
            from .. import __version__

            print(f"{PROG} {__version__}")
            return 0
        flags = {name: getattr(options, name) for name, _ in _FLAGS}
        policy = resolve_policy(os.environ, policy_json=options.policy_json, flags=flags)
        strict = strict_from(os.environ) and not options.no_strict
        launch = plan_launch(module, command)
        schedule = _inject_schedule(options.inject)
    except LauncherError as error:
        print(f"{PROG}: {error}", file=sys.stderr)
        return 2
    if schedule is not None:
        from .inject_launch import start_injected_proxy

        proxied = start_injected_proxy(schedule, os.environ)
        print(
            f"{PROG}: fault proxy {proxied.proxy.base_url} -> {proxied.proxy.upstream_url}: "
            f"{schedule.describe()}",
            file=sys.stderr,
        )

    from ..rules.errors import LiveResumeError

    bootstrap_environment(os.environ, policy, strict=strict)
    try:
        if launch.in_process:
            from .patch import install_resolved

            install_resolved(policy, strict=strict)
        elif strict:
            from ..compat.adk_compat import check_supported_version

            check_supported_version()
    except LiveResumeError as error:
        print(f"{PROG}: {error}", file=sys.stderr)
        return 2
    if options.verbose:
        if launch.in_process:
            how = f"installed; running {launch.kind} {launch.target} in this process"
        else:
            how = f"exec {launch.target}; its Python processes install on import of google.adk"
        print(f"{PROG}: {how}; policy {policy_to_json(policy)}", file=sys.stderr)
    if not launch.in_process:
        # exec would end the proxy's thread with this process: run the command as a child
        return _exec(launch) if schedule is None else _child(launch)
    try:
        return _run_in_process(launch)
    except LauncherError as error:
        print(f"{PROG}: {error}", file=sys.stderr)
        return 2
