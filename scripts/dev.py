#!/usr/bin/env python3
"""Set up a local virtual environment and run one of the project's jobs.

Needs nothing but the standard library of Python 3.11+, so it works on a fresh clone::

    python3 scripts/dev.py demo            # the main job (see docs/quickstart.md)
    python3 scripts/dev.py demo --drop goaway --audio   # every reproduction flag passes through
    python3 scripts/dev.py test            # every test but the long soaks, in parallel
    python3 scripts/dev.py test tests/unit/conversation/test_outbox.py   # one file
    python3 scripts/dev.py test --adk 1.27.2 -k resume   # against another google-adk release
    python3 scripts/dev.py test --python 3.13            # under another interpreter (pyenv's)
    python3 scripts/dev.py soak            # the seeded soaks: 200 seeds each + the pinned ones
    python3 scripts/dev.py soak --seeds 2000 --first-seed 200 --load 2   # a long soak, loaded
    python3 scripts/dev.py lint            # ruff + mypy
    python3 scripts/dev.py docs            # the documentation site, built strict into site/
    python3 scripts/dev.py conformance     # tests/service/: the fake; the real service with a key
    python3 scripts/dev.py conformance --report report.md   # ... and a Markdown report
    python3 scripts/dev.py bench resume_gap          # one benchmark (benchmarks/<name>.py)
    python3 scripts/dev.py bench all --quick         # every benchmark, smoke-test size

Options after the test files go to pytest.

The environment lives in ``.venv`` (``.venv-adk-<version>`` with ``--adk``, a ``-py3.X`` suffix
with ``--python``). It is created when missing and re-installed only when ``pyproject.toml`` or
the requested pins change, so repeat runs start in seconds.

``test`` and ``soak`` run pytest-xdist with :data:`TEST_WORKERS` workers, or none when test
files are named (``--workers N`` chooses; 0 runs the tests in this process, one after another,
as ``-p no:xdist`` or ``-n`` in the pytest options do too). A ``-m EXPR`` of yours is joined
with the job's own selection (``not soak``, ``chaos``).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STAMP_NAME = ".adk-live-resume-stamp"
#: One set of extras for every job, so switching between them never re-installs.
DEV_EXTRAS = "test,bench,lint,browser,docs"
#: pytest-xdist workers for ``test`` and ``soak``. The tests mostly wait on the fake's clocks
#: and the network (about 1 s of CPU in 5 of wall time), so more workers than cores pays; on 2
#: cores the fast suite took 600 s with 1 worker, 150 s with 4, 125 s with 6 and 120 s with 8
#: (docs/development.md); past 6 the gain is noise and the load on a shared machine is not.
TEST_WORKERS = 6
#: Where the soak's seeds come from (tests/soak/test_chaos.py, tests/soak/test_voice_chaos.py,
#: tests/soak/test_workers_chaos.py).
SOAK_FILES = (
    "tests/soak/test_chaos.py",
    "tests/soak/test_voice_chaos.py",
    "tests/soak/test_workers_chaos.py",
)


class MissingPython(RuntimeError):
    """The interpreter asked for with ``--python`` is not installed here."""


def find_python(version: str) -> Path:
    """The interpreter for ``version`` ("3.12", or exactly "3.12.1"): pyenv's newest matching
    installation, else ``python3.12`` on ``PATH``; raises :class:`MissingPython` saying where
    it looked."""
    if not re.fullmatch(r"3\.\d+(\.\d+)?", version):
        raise MissingPython(f"--python wants a version such as 3.12 or 3.13.0, not {version!r}")
    pyenv = shutil.which("pyenv")
    if pyenv:
        listed = subprocess.run(
            [pyenv, "versions", "--bare"], capture_output=True, text=True, check=False
        ).stdout.split()
        matching = [v for v in listed if v == version or v.startswith(version + ".")]
        matching = [v for v in matching if re.fullmatch(r"\d+\.\d+\.\d+", v)]
        for candidate in sorted(matching, key=lambda v: [int(n) for n in v.split(".")])[::-1]:
            root = subprocess.run(
                [pyenv, "prefix", candidate], capture_output=True, text=True, check=False
            ).stdout.strip()
            if root and (Path(root) / "bin" / "python3").exists():
                return Path(root) / "bin" / "python3"
    short = ".".join(version.split(".")[:2])
    found = shutil.which(f"python{short}")
    if found:
        return Path(found)
    raise MissingPython(
        f"Python {version} is not installed here (looked in pyenv's versions and for "
        f"python{short} on PATH); install it (pyenv install {version}) or leave --python out"
    )


def _venv_python(env_dir: Path) -> Path:
    if os.name == "nt":
        return env_dir / "Scripts" / "python.exe"
    return env_dir / "bin" / "python"


def _stamp(extras: str, pins: list[str]) -> str:
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes())
    digest.update(extras.encode())
    for pin in pins:
        digest.update(pin.encode())
    return digest.hexdigest()


def env_name(adk: str | None, suffix: str = "", python_version: str | None = None) -> str:
    """``.venv``, ``.venv-adk-<adk>``, then ``suffix``, then ``-py<version>`` if one is asked."""
    name = (f".venv-adk-{adk}" if adk else ".venv") + suffix
    return name + (f"-py{python_version}" if python_version else "")


def ensure_env(
    extras: str,
    adk: str | None,
    *,
    extra_pins: tuple[str, ...] = (),
    suffix: str = "",
    python_version: str | None = None,
) -> Path:
    """Create or reuse the venv and make sure the project and its extras are installed.

    ``extra_pins`` (requirements such as ``google-genai==1.56.0``) go into a venv of their own,
    ``.venv-adk-<adk><suffix>``; ``python_version`` builds it with that interpreter
    (:func:`find_python`) instead of this one, in ``...-py<version>``."""
    env_dir = ROOT / env_name(adk, suffix, python_version)
    pins = ([f"google-adk=={adk}"] if adk else []) + list(extra_pins)
    python = _venv_python(env_dir)
    stamp_file = env_dir / STAMP_NAME
    if python.exists() and not stamp_file.exists() and not _has_pip(python):
        # (a build interrupted before pip got in: pip can no longer mend it)
        print(f"[dev] {env_dir.name} was left half-built; building it again", flush=True)
        python.unlink()
    if not python.exists():
        print(f"[dev] creating {env_dir.name}", flush=True)
        if python_version:
            base = find_python(python_version)
            subprocess.run([str(base), "-m", "venv", "--clear", str(env_dir)], check=True)
        else:
            venv.EnvBuilder(with_pip=True, clear=True).create(env_dir)
    wanted = _stamp(extras, pins)
    if stamp_file.exists() and stamp_file.read_text() == wanted:
        return python
    what = " ".join([extras, *pins])
    print(f"[dev] installing the project into {env_dir.name} ({what})", flush=True)
    subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--upgrade",
            "pip",
        ],
        check=True,
    )
    subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "-e",
            f"{ROOT}[{extras}]",
            *pins,
        ],
        check=True,
    )
    stamp_file.write_text(wanted)
    return python


def _has_pip(python: Path) -> bool:
    """Whether ``python`` can run pip."""
    check = [str(python), "-m", "pip", "--version"]
    return subprocess.run(check, capture_output=True).returncode == 0


def _run(cmd: list[str], env: dict[str, str] | None = None) -> int:
    print("[dev] $ " + " ".join(cmd), flush=True)
    return subprocess.call(cmd, cwd=ROOT, env=env)


def parallel_args(rest: list[str], workers: int) -> list[str]:
    """pytest-xdist options for ``workers`` (none for 0, or when ``rest`` chooses already:
    ``-n``/``--numprocesses``/``-p no:xdist``)."""
    chosen = any(
        a in ("-n", "--numprocesses", "no:xdist") or a.startswith(("-n", "--numprocesses="))
        for a in rest
    )
    if workers <= 0 or chosen:
        return []
    # worksteal: the slow tests (subprocesses, PostgreSQL) do not hold back the others' worker
    return ["-n", str(workers), "--dist", "worksteal"]


def soak_env(seeds: int | None, first_seed: int | None, load: int | None) -> dict[str, str]:
    """The environment the soaks read (see tests/soak/test_chaos.py, tests/soak/test_voice_chaos.py
    and tests/soak/test_workers_chaos.py)."""
    env = dict(os.environ)
    prefixes = (
        "ADK_LIVE_RESUME_CHAOS",
        "ADK_LIVE_RESUME_VOICE_CHAOS",
        "ADK_LIVE_RESUME_WORKERS_CHAOS",
    )
    for prefix in prefixes:
        if seeds is not None:
            env[f"{prefix}_RUNS"] = str(seeds)
        if first_seed is not None:
            env[f"{prefix}_FIRST_SEED"] = str(first_seed)
    if load is not None:
        env["ADK_LIVE_RESUME_CHAOS_LOAD"] = str(load)
    return env


def with_marker(rest: list[str], base: str) -> list[str]:
    """``-m base`` joined with the user's own ``-m EXPR`` in ``rest`` (pytest keeps only the last
    ``-m``, so ``test -m "not e2e"`` would otherwise bring the soaks back)."""
    out: list[str] = []
    chosen: list[str] = []
    words = iter(rest)
    for word in words:
        if word == "-m":
            chosen.append(next(words, ""))
        elif word.startswith("-m") and len(word) > 2:
            chosen.append(word[2:])
        else:
            out.append(word)
    expression = " and ".join(f"({e})" for e in [base, *chosen]) if chosen else base
    return ["-m", expression, *out]


def _names_tests(rest: list[str]) -> bool:
    """Whether the pytest options name test files or ids (else the soak names its own)."""
    return any(not a.startswith("-") and (".py" in a or a.startswith("tests")) for a in rest)


def benchmark_names() -> list[str]:
    """The benchmarks: every ``benchmarks/*.py`` that is not a helper module (``_*.py``,
    ``common.py``)."""
    return sorted(
        p.stem
        for p in (ROOT / "benchmarks").glob("*.py")
        if not p.name.startswith("_") and p.stem != "common"
    )


def run_benchmarks(python: Path, name: str, rest: list[str]) -> int:
    """Run one benchmark, or all of them one after the other (the exit status is the worst)."""
    names = benchmark_names()
    chosen = names if name == "all" else [name]
    unknown = [n for n in chosen if n not in names]
    if unknown:
        print(f"[dev] no benchmark named {unknown[0]!r}; choose one of: all, {', '.join(names)}")
        return 2
    code = 0
    for each in chosen:
        code = max(code, _run([str(python), str(ROOT / "benchmarks" / f"{each}.py"), *rest]))
    return code


def build_docs(python: Path, rest: list[str]) -> int:
    """``mkdocs build --strict`` into ``site/`` (gitignored), with no network: the theme loads
    no web fonts and the hooks (``scripts/docs_hooks.py``) read only this checkout."""
    os.environ["NO_MKDOCS_2_WARNING"] = "1"  # Material's end-of-life notice, on every build
    site = ROOT / "site"
    return _run([str(python), "-m", "mkdocs", "build", "--strict", "--site-dir", str(site), *rest])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="job", required=True)
    demo = sub.add_parser(
        "demo",
        help="run the main job: stock ADK against patched ADK (every other option, --help "
        "included, goes to scripts/reproduce_timeout.py)",
        add_help=False,
        allow_abbrev=False,
    )
    demo.add_argument("--adk", help="google-adk version to use (default: newest on the index)")
    test = sub.add_parser(
        "test",
        help="run every test but the long soaks, in parallel (other options go to pytest)",
    )
    soak = sub.add_parser(
        "soak",
        help="run the seeded soaks (tests/soak/test_chaos.py, tests/soak/test_voice_chaos.py): 200 "
        "seeds "
        "each and the pinned ones (other options go to pytest)",
    )
    soak.add_argument("--seeds", type=int, help="seeds per soak (default 200)")
    soak.add_argument("--first-seed", type=int, help="the first seed (default 0)")
    soak.add_argument("--load", type=int, help="busy processes beside the voice soak (default 0)")
    for job in (test, soak):
        job.add_argument("--adk", help="google-adk version to test against (default: newest)")
        job.add_argument(
            "--python", help="run under this Python (3.12, 3.13.0; pyenv's or python3.X on PATH)"
        )
        job.add_argument(
            "--if-python-present",
            action="store_true",
            help="with --python: say so and exit 0 where that interpreter is missing",
        )
        job.add_argument(
            "--workers",
            type=int,
            help=f"pytest-xdist workers (default {TEST_WORKERS}, none when test files are named; "
            "0: one process, in order)",
        )
    bench = sub.add_parser(
        "bench",
        help="run benchmarks/<name>.py, or every benchmark with 'all' (other options, "
        "--quick included, go to the benchmark)",
    )
    bench.add_argument("name", help="a benchmark's name (a file in benchmarks/) or 'all'")
    bench.add_argument("--adk", help="google-adk version to use (default: newest)")
    conformance = sub.add_parser(
        "conformance",
        help="the conformance suite (tests/service/): the fake server always, the real service "
        "too when GOOGLE_API_KEY (or Vertex credentials) is set (other options go to pytest)",
    )
    conformance.add_argument("--adk", help="google-adk version to use (default: newest)")
    conformance.add_argument(
        "--report",
        metavar="FILE",
        help="also write a Markdown report to FILE (versions, targets, failures; handles and "
        "keys redacted) to paste into an issue",
    )
    docs = sub.add_parser(
        "docs",
        help="build the documentation site (mkdocs.yml) strict into site/: a broken link, or a "
        "public name without a docstring or a place in the API reference, fails (other options "
        "go to mkdocs build)",
    )
    docs.add_argument("--adk", help=argparse.SUPPRESS)
    lint = sub.add_parser("lint", help="ruff and mypy")
    lint.add_argument("--adk", help=argparse.SUPPRESS)
    args, rest = parser.parse_known_args(argv)

    if args.job == "demo":
        python = ensure_env(DEV_EXTRAS, args.adk)
        script = ROOT / "scripts" / "reproduce_timeout.py"
        if script.exists():
            return _run([str(python), str(script), *rest])
        return _run([str(python), "-m", "adk_live_resume.testing", *rest])
    if args.job in ("test", "soak"):
        try:
            python = ensure_env(DEV_EXTRAS, args.adk, python_version=args.python)
        except MissingPython as missing:
            print(f"[dev] {missing}", flush=True)
            return 0 if args.if_python_present else 2
        named = _names_tests(rest)
        # Named files start in a second without workers; a whole run gains from them.
        workers = args.workers if args.workers is not None else (0 if named else TEST_WORKERS)
        parallel = parallel_args(rest, workers)
        if args.job == "test":
            return _run([str(python), "-m", "pytest", *parallel, *with_marker(rest, "not soak")])
        files = [] if named else list(SOAK_FILES)
        env = soak_env(args.seeds, args.first_seed, args.load)
        marked = with_marker(rest, "chaos")
        return _run([str(python), "-m", "pytest", *parallel, *marked[:2], *files, *marked[2:]], env)
    if args.job == "conformance":
        python = ensure_env(DEV_EXTRAS, args.adk)
        suite = [str(python), "-m", "pytest", "-m", "service", "-rsx", "tests/service", *rest]
        if not args.report:
            return _run(suite)
        results = Path(tempfile.mkdtemp(prefix="conformance-")) / "results.xml"
        code = _run([*suite, f"--junitxml={results}"])
        report = str(ROOT / "scripts" / "conformance_report.py")
        try:
            return _run([str(python), report, str(results), args.report]) or code
        finally:
            shutil.rmtree(results.parent, ignore_errors=True)
    if args.job == "docs":
        python = ensure_env(DEV_EXTRAS, args.adk)
        return build_docs(python, rest)
    if args.job == "bench":
        python = ensure_env(DEV_EXTRAS, args.adk)
        return run_benchmarks(python, args.name, rest)
    python = ensure_env(DEV_EXTRAS, args.adk)
    code = _run([str(python), "-m", "ruff", "check", "."])
    code |= _run([str(python), "-m", "ruff", "format", "--check", "."])
    code |= _run([str(python), "-m", "mypy"])
    return code


if __name__ == "__main__":
    sys.exit(main())
