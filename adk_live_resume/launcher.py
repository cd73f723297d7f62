"""Zero-code launcher: run an ADK app with the resumable live loop, without editing it.

In the style of ``opentelemetry-instrument``::

    adk-live-resume adk web ./agents            # a console script of this environment
    adk-live-resume python app.py --port 8080   # any command
    adk-live-resume app.py                      # a Python file
    python -m adk_live_resume -m mypkg.server   # a module, like python -m
    adk-live-resume --max-attempts 5 --go-away-margin 10 adk api_server

How the patch reaches the code (both at once, so it holds for whole process trees):

* **In this process.** ``-m MODULE``, a ``*.py`` file and a console script installed in the
  same environment as adk-live-resume (``adk``, ``uvicorn``...) run right here, after
  :func:`adk_live_resume.install`, through :mod:`runpy` or the script's entry point. No
  second interpreter, no dependence on start-up hooks.
* **In every child Python process.** The launcher puts ``adk_live_resume/_bootstrap`` first
  on ``PYTHONPATH`` and the chosen policy in ``ADK_LIVE_RESUME_BOOTSTRAP_POLICY``. Its
  ``sitecustomize`` costs nothing at start-up: it waits until the process imports
  ``google.adk`` and installs the patch at that moment (processes that never import ADK are
  not touched). Any other ``sitecustomize`` on the path still runs. This covers reloaders and
  worker processes (``adk web --reload``, uvicorn workers, multiprocessing) and commands that
  are not Python themselves (a shell script that starts ``python``). Every other command is
  started that way (``exec``), ``python``/``python3`` meaning the interpreter
  adk-live-resume runs in.

Policy: flags, ``--policy-json``, or environment variables, later ones winning::

    defaults < ADK_LIVE_RESUME_POLICY_JSON < ADK_LIVE_RESUME_<FIELD> < --policy-json < flags

where ``<FIELD>`` is any :class:`~adk_live_resume.ResumePolicy` field in upper case
(``ADK_LIVE_RESUME_MAX_ATTEMPTS=5``, ``ADK_LIVE_RESUME_GO_AWAY_MARGIN=10``,
``ADK_LIVE_RESUME_RETRYABLE_CLOSE_CODES=1000,1006,1011``). ``ADK_LIVE_RESUME_STRICT=0`` (or
``--no-strict``) allows a google-adk release outside the tested range.

If your code also calls ``install()`` itself, it must pass the same policy (or none), else
it raises :class:`~adk_live_resume.InstallConflictError`.

This module imports nothing heavy at import time: the bootstrap imports it in child processes.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.metadata
import importlib.util
import json
import os
import runpy
import shutil
import sys
from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from .policy import ResumePolicy

PROG = "adk-live-resume"
ENV_PREFIX = "ADK_LIVE_RESUME_"
POLICY_JSON_ENV = "ADK_LIVE_RESUME_POLICY_JSON"
STRICT_ENV = "ADK_LIVE_RESUME_STRICT"
#: The fully resolved policy the launcher hands to child processes (takes precedence there).
BOOTSTRAP_POLICY_ENV = "ADK_LIVE_RESUME_BOOTSTRAP_POLICY"
#: The directory whose ``sitecustomize.py`` patches child processes.
BOOTSTRAP_DIR = Path(__file__).resolve().parent / "_bootstrap"

_FALSE = frozenset({"0", "false", "no", "off"})
_TRUE = frozenset({"1", "true", "yes", "on"})

#: Flags that set one policy field each: (flag, field, type).
_FLAGS: tuple[tuple[str, str, type], ...] = (
    ("--max-attempts", "max_attempts", int),
    ("--go-away-margin", "go_away_margin", float),
    ("--outage-timeout", "outage_timeout", float),
    ("--max-reconnects-per-minute", "max_reconnects_per_minute", int),
    ("--connect-timeout", "connect_timeout", float),
)
_VALUE_OPTIONS = frozenset({"--policy-json", *(flag for flag, _, _ in _FLAGS)})
_SWITCHES = frozenset({"-h", "--help", "--no-strict", "-v", "--verbose", "--version"})


class LauncherError(Exception):
    """A usage or configuration problem: reported on stderr, exit status 2."""


# ---- the policy ----------------------------------------------------------------------------


def _fields() -> dict[str, dataclasses.Field[Any]]:
    return {f.name: f for f in dataclasses.fields(ResumePolicy)}


def _kind(name: str) -> type:
    """The Python type of a policy field, read from its default value."""
    return type(getattr(ResumePolicy(), name))


def _coerce(name: str, value: object, source: str) -> object:
    """Check and convert one policy value from JSON or from an environment string."""
    kind = _kind(name)
    text = value.strip() if isinstance(value, str) else None
    try:
        if kind is bool:
            if isinstance(value, bool):
                return value
            if text is not None and text.lower() in _TRUE | _FALSE:
                return text.lower() in _TRUE
        elif kind is int:
            if isinstance(value, int) and not isinstance(value, bool):
                return value
            if text is not None:
                return int(text)
        elif kind is float:
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return float(value)
            if text is not None:
                return float(text)
        elif kind is frozenset:
            items: object = value
            if text is not None:
                items = [piece for piece in text.replace(" ", "").split(",") if piece]
            if isinstance(items, (list, tuple)):
                return frozenset(int(item) for item in items)
    except (TypeError, ValueError):
        pass
    raise LauncherError(f"{source}: {name} must be {_describe(kind)}, not {value!r}")


def _describe(kind: type) -> str:
    return {
        bool: "true or false",
        int: "an integer",
        float: "a number",
        frozenset: "a list of close codes",
    }.get(kind, kind.__name__)


def _from_json(text: str, source: str) -> dict[str, object]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise LauncherError(f"{source} is not valid JSON: {error}") from None
    if not isinstance(data, dict):
        raise LauncherError(f"{source} must be a JSON object of ResumePolicy fields")
    known = _fields()
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise LauncherError(
            f"{source}: unknown ResumePolicy field(s) {', '.join(unknown)}; "
            f"known: {', '.join(known)}"
        )
    return {name: _coerce(name, value, source) for name, value in data.items()}


def resolve_policy(
    environ: Mapping[str, str],
    *,
    policy_json: str | None = None,
    flags: Mapping[str, object] | None = None,
) -> ResumePolicy:
    """The policy from defaults, environment, ``--policy-json`` and flags (later wins)."""
    changes: dict[str, object] = {}
    if environ.get(POLICY_JSON_ENV):
        changes.update(_from_json(environ[POLICY_JSON_ENV], POLICY_JSON_ENV))
    for name in _fields():
        variable = ENV_PREFIX + name.upper()
        if variable in environ and environ[variable].strip():
            changes[name] = _coerce(name, environ[variable], variable)
    if policy_json:
        changes.update(_from_json(policy_json, "--policy-json"))
    for name, value in (flags or {}).items():
        if value is not None:
            changes[name] = value
    try:
        return ResumePolicy(**changes)  # type: ignore[arg-type]
    except ValueError as error:
        raise LauncherError(str(error)) from None


def policy_to_json(policy: ResumePolicy) -> str:
    """A JSON object that :func:`resolve_policy` turns back into ``policy``."""
    data: dict[str, object] = {}
    for name in _fields():
        value = getattr(policy, name)
        data[name] = sorted(value) if isinstance(value, frozenset) else value
    return json.dumps(data, sort_keys=True)


def strict_from(environ: Mapping[str, str]) -> bool:
    """``ADK_LIVE_RESUME_STRICT``: anything but 0/false/no/off means strict."""
    return environ.get(STRICT_ENV, "1").strip().lower() not in _FALSE


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
    ``sitecustomize`` calls this once the process has imported ``google.adk``."""
    from .patch import install

    environ = os.environ if environ is None else environ
    handed_down = environ.get(BOOTSTRAP_POLICY_ENV)
    if handed_down:
        policy = ResumePolicy(**_from_json(handed_down, BOOTSTRAP_POLICY_ENV))  # type: ignore[arg-type]
    else:
        policy = resolve_policy(environ)
    install(policy, strict=strict_from(environ))


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
            return options, argv[i + 1], list(argv[i + 2 :])
        if word.startswith("-m") and not word.startswith("--"):
            return options, word[2:], list(argv[i + 1 :])
        name = word.split("=", 1)[0]
        if name in _VALUE_OPTIONS:
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
        return options, None, list(argv[i:])
    return options, None, []


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
        raise LauncherError(f"command not found: {name}")
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
            raise LauncherError(f"no module named {launch.target}")
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


# ---- command line ----------------------------------------------------------------------------


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
            "patch when it imports google.adk."
        ),
        epilog=(
            "Environment: ADK_LIVE_RESUME_POLICY_JSON, ADK_LIVE_RESUME_<FIELD> for any "
            "ResumePolicy field (e.g. ADK_LIVE_RESUME_MAX_ATTEMPTS=5), "
            "ADK_LIVE_RESUME_STRICT=0. Precedence: defaults < POLICY_JSON < <FIELD> "
            "variables < --policy-json < flags."
        ),
    )
    parser.add_argument(
        "--policy-json",
        metavar="JSON",
        help="ResumePolicy fields as a JSON object, e.g. '{\"max_attempts\": 5}'",
    )
    for flag, name, kind in _FLAGS:
        parser.add_argument(flag, dest=name, type=kind, metavar="N" if kind is int else "SECONDS")
    parser.add_argument(
        "--no-strict",
        action="store_true",
        help="try google-adk releases outside the tested range",
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="say on stderr what is run and how"
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """``adk-live-resume`` / ``python -m adk_live_resume``; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    try:
        option_words, module, command = split_argv(argv)
        options = parser.parse_args(option_words)
        if options.version:
            from . import __version__

            print(f"{PROG} {__version__}")
            return 0
        flags = {name: getattr(options, name) for _, name, _ in _FLAGS}
        policy = resolve_policy(os.environ, policy_json=options.policy_json, flags=flags)
        strict = strict_from(os.environ) and not options.no_strict
        launch = plan_launch(module, command)
    except LauncherError as error:
        print(f"{PROG}: {error}", file=sys.stderr)
        return 2

    from .errors import LiveResumeError

    bootstrap_environment(os.environ, policy, strict=strict)
    try:
        if launch.in_process:
            from .patch import install

            install(policy, strict=strict)
        elif strict:
            from .adk_compat import check_supported_version

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
        return _exec(launch)
    try:
        return _run_in_process(launch)
    except LauncherError as error:
        print(f"{PROG}: {error}", file=sys.stderr)
        return 2
