#!/usr/bin/env python3
"""Set up a local virtual environment and run one of the project's jobs.

Needs nothing but the standard library of Python 3.11+, so it works on a fresh clone::

    python3 scripts/dev.py demo            # the main job (see docs/quickstart.md)
    python3 scripts/dev.py demo --drop goaway --audio   # every reproduction flag passes through
    python3 scripts/dev.py test            # the whole test suite
    python3 scripts/dev.py test --adk 1.27.2 -k resume   # against another google-adk release
    python3 scripts/dev.py lint            # ruff + mypy
    python3 scripts/dev.py docs            # the documentation site, built strict into site/
    python3 scripts/dev.py conformance     # tests/service/: the fake; the real service with a key
    python3 scripts/dev.py bench resume_gap          # one benchmark (benchmarks/<name>.py)
    python3 scripts/dev.py bench all --quick         # every benchmark, smoke-test size

The environment lives in ``.venv`` (``.venv-adk-<version>`` with ``--adk``). It is created
when missing and re-installed only when ``pyproject.toml`` or the requested pins change, so
repeat runs start in seconds.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STAMP_NAME = ".adk-live-resume-stamp"
#: One set of extras for every job, so switching between them never re-installs.
DEV_EXTRAS = "test,bench,lint,browser,docs"


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


def ensure_env(
    extras: str, adk: str | None, *, extra_pins: tuple[str, ...] = (), suffix: str = ""
) -> Path:
    """Create or reuse the venv and make sure the project and its extras are installed.

    ``extra_pins`` (requirements such as ``google-genai==1.56.0``) go into a venv of their own,
    ``.venv-adk-<adk><suffix>``."""
    env_dir = ROOT / ((f".venv-adk-{adk}" if adk else ".venv") + suffix)
    pins = ([f"google-adk=={adk}"] if adk else []) + list(extra_pins)
    python = _venv_python(env_dir)
    if not python.exists():
        print(f"[dev] creating {env_dir.name}", flush=True)
        venv.EnvBuilder(with_pip=True, clear=True).create(env_dir)
    stamp_file = env_dir / STAMP_NAME
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


def _run(cmd: list[str]) -> int:
    print("[dev] $ " + " ".join(cmd), flush=True)
    return subprocess.call(cmd, cwd=ROOT)


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
    test = sub.add_parser("test", help="run the whole test suite (other options go to pytest)")
    test.add_argument("--adk", help="google-adk version to test against (default: newest)")
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
    if args.job == "test":
        python = ensure_env(DEV_EXTRAS, args.adk)
        code = _run([str(python), "-m", "pytest", *rest])
        return code
    if args.job == "conformance":
        python = ensure_env(DEV_EXTRAS, args.adk)
        return _run([str(python), "-m", "pytest", "-m", "service", "-rsx", "tests/service", *rest])
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
