#!/usr/bin/env python3
"""Run the test suite against many google-adk releases, one virtual environment each.

Needs only the standard library (environments are built by ``scripts/dev.py``'s
``ensure_env``, so ``.venv-adk-<version>`` is shared with ``dev.py test --adk <version>``)::

    python3 scripts/matrix.py                        # end-to-end scenarios, every release
    python3 scripts/matrix.py --versions 1.39.1,2.9.2
    python3 scripts/matrix.py --full --versions 2.13.0
    python3 scripts/matrix.py --exclude 1.27.2,2.13.0   # what CI runs after dev.py test
    python3 scripts/matrix.py -- -k go_away          # extra pytest arguments after --
    python3 scripts/matrix.py --dependency-bounds --versions 1.27.2,2.13.0
    python3 scripts/matrix.py --versions 2.13.0 --python 3.13   # under another interpreter

By default each release runs the end-to-end resumption scenarios: every test marked ``e2e`` or
``core`` (the adapter tests, the install tests, stock ADK's behaviour, the resume tests).
``--full`` runs the whole suite. Environments are built ``--install-jobs`` at a time (40-120 s
each with a cold pip cache; mostly pip's own CPU work, so more than 2 gains little on 2 cores),
the end-to-end releases first; a release is tested as soon as its environment is ready,
``--jobs`` releases at a time, each with ``--workers`` pytest-xdist workers (the end-to-end
tests mostly wait on the fake server; see ``dev.TEST_WORKERS``).
A failed test fails its release; ``--rerun N`` runs it again on its own to tell a flake from a
bug, and a pass there is reported as flaky but still fails the release (a flake is a bug to
fix, never retried away). ``--python 3.13`` builds the environments with that interpreter
(``dev.find_python``), ``--python 3.12,3.13`` tests each release under each (``--jobs`` at a
time; ``--core-only-python 3.12`` runs only the core tests under 3.12); a missing one fails
unless ``--if-python-present`` (then the others run). Ends with a summary
table; exits non-zero if any release failed.

``--dependency-bounds``: for each release, two more environments, with the oldest and with the
newest google-genai and websockets that the release allows (read from its metadata in
``.venv-adk-<version>``, which is built first), running only the core resumption tests
(``core`` but stock ADK's documented failures, whose exception types move with google-genai).
Dependencies move under us between our releases; this catches it.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dev import (  # environments: dev.ensure_env, run in a child process per release
    ROOT,
    TEST_WORKERS,
    MissingPython,
    env_name,
    find_python,
    parallel_args,
)

#: Releases tested by default: one or more per family of ADK's live loop (see
#: docs/supported-releases.md). Keep the newest last; keep in step with pyproject.toml.
DEFAULT_VERSIONS = (
    "1.27.2",
    "1.28.1",
    "1.33.0",
    "1.39.1",
    "2.0.0",
    "2.3.0",
    "2.6.3",
    "2.8.0",
    "2.9.2",
    "2.10.0",
    "2.11.0",
    "2.13.0",
)

#: The end-to-end selection: pytest options (markers, not files, so that a file's other
#: tests, such as the README's documentation blocks, run only in the full suites).
E2E_SELECTION = ("tests", "-m", "e2e or core")
#: What ``--dependency-bounds`` runs: the core resumption tests but stock ADK's documented
#: failures.
CORE_SELECTION = ("tests", "-m", "core and not stock")
#: What a ``--core-only`` release runs: the core resumption tests and stock ADK's behaviour
#: on that release (the adapter, the install, the resume tests).
CORE_ONLY_SELECTION = ("tests", "-m", "core")
#: The most workers a ``--core-only`` release gets: each worker collects the whole suite
#: (about 10 s of CPU) and the core tests finish as soon on two, so more workers only add
#: collections on a machine the other releases keep busy (measured alone: 2 workers 25 s of
#: CPU, 4 workers 47 s, both about 30 s of wall time).
CORE_WORKERS = 2


#: What ``--dependency-bounds`` moves: the libraries ADK's live path talks through.
BOUND_PACKAGES = ("google-genai", "websockets")


def requirement_bounds(requires: list[str], package: str) -> tuple[str, str]:
    """(oldest pin, newest spec) of ``package`` among a release's ``Requires-Dist`` lines:
    ``"google-genai>=1.56.0, <2.0.0"`` -> ``("google-genai==1.56.0",
    "google-genai>=1.56.0,<2.0.0")``. ValueError without a ``>=`` lower bound."""
    for line in requires:
        requirement = line.split(";", 1)[0].strip()
        match = re.match(r"^([A-Za-z0-9_.\-]+)\s*(?:\[[^\]]*\])?\s*\(?([^)]*)\)?$", requirement)
        if match is None or match.group(1).lower().replace("_", "-") != package:
            continue
        spec = "".join(match.group(2).split())
        lower = re.search(r">=([0-9][^,]*)", spec)
        if lower is None:
            raise ValueError(f"{package} has no >= lower bound in {line!r}")
        return f"{package}=={lower.group(1)}", f"{package}{spec}"
    raise ValueError(f"{package} is not among the requirements {requires!r}")


def release_requires(version: str) -> list[str]:
    """``Requires-Dist`` of google-adk in ``.venv-adk-<version>``."""
    env_dir = ROOT / f".venv-adk-{version}"
    python = env_dir / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    code = "import importlib.metadata as m; print(chr(10).join(m.requires('google-adk') or []))"
    out = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True)
    return [line for line in out.stdout.splitlines() if line.strip()]


@dataclass
class Result:
    version: str
    #: the google-adk release, the extra pins and the venv suffix (dependency-bound runs)
    adk: str = ""
    pins: tuple[str, ...] = ()
    suffix: str = ""
    #: the interpreter (``--python``), None for this one
    python_version: str | None = None
    #: the pytest selection for this release alone (``--core-only``); empty: the run's
    selection: tuple[str, ...] = ()
    install_seconds: float = 0.0
    test_seconds: float = 0.0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    flaky: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    note: str = ""
    log: Path | None = None

    @property
    def ok(self) -> bool:
        return (
            not self.note
            and self.failed == 0
            and not self.flaky
            and self.errors == 0
            and self.passed > 0
        )


def _install(
    version: str,
    extras: str,
    log_dir: Path,
    pins: tuple[str, ...] = (),
    suffix: str = "",
    python_version: str | None = None,
) -> tuple[float, str]:
    """Build (or reuse) ``.venv-adk-<version><suffix>[-py<python>]``; return (seconds, error
    or "")."""
    started = time.monotonic()
    log = log_dir / f"install-{env_name(version, suffix, python_version).lstrip('.')}.log"
    code = (
        f"import sys; sys.path.insert(0, {str(ROOT / 'scripts')!r}); "
        f"from dev import ensure_env; "
        f"ensure_env({extras!r}, {version!r}, extra_pins={pins!r}, suffix={suffix!r}, "
        f"python_version={python_version!r})"
    )
    with log.open("w") as out:
        done = subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, stdout=out, stderr=subprocess.STDOUT
        )
    seconds = time.monotonic() - started
    if done.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:])
        return seconds, f"install failed (see {log}):\n{tail}"
    return seconds, ""


def _node_id(classname: str, name: str) -> str:
    """``tests.test_x.TestY`` + ``test_z[a]`` -> ``tests/test_x.py::TestY::test_z[a]``."""
    parts = classname.split(".")
    for cut in range(len(parts), 0, -1):
        module = "/".join(parts[:cut]) + ".py"
        if (ROOT / module).exists():
            return "::".join([module, *parts[cut:], name])
    return f"{classname.replace('.', '/')}.py::{name}"


def _count(junit: Path, result: Result) -> list[str]:
    """Add the counts of a junit report to ``result``; return the failed test ids."""
    failed: list[str] = []
    if not junit.exists():
        return failed
    for case in ElementTree.parse(junit).getroot().iter("testcase"):
        test_id = _node_id(case.get("classname", ""), case.get("name", ""))
        if case.find("failure") is not None or case.find("error") is not None:
            failed.append(test_id)
        elif case.find("skipped") is not None:
            result.skipped += 1
        else:
            result.passed += 1
    return failed


def _pytest(python: Path, args: list[str], junit: Path, log: Path) -> int:
    cmd = [str(python), "-m", "pytest", "-q", "-rfE", "-p", "no:cacheprovider"]
    cmd += [f"--junitxml={junit}", *args]
    with log.open("a") as out:
        out.write("$ " + " ".join(cmd) + "\n")
        out.flush()
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
        return subprocess.run(
            cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, env=env
        ).returncode


def plan(
    versions: list[str],
    pythons: list[str | None],
    *,
    core_only: set[str],
    core_only_pythons: frozenset[str] = frozenset(),
) -> dict[str, Result]:
    """One result to fill per release and interpreter, labelled as the table shows it; the
    releases in ``core_only``, and every release under an interpreter in
    ``core_only_pythons``, carry the core selection of their own."""
    return {
        (label := f"{v} py{p}" if p else v): Result(
            label,
            adk=v,
            python_version=p,
            selection=CORE_ONLY_SELECTION if v in core_only or p in core_only_pythons else (),
        )
        for v in versions
        for p in pythons or [None]
    }


def _run_tests(
    result: Result, selection: list[str], rerun: int, log_dir: Path, workers: int
) -> Result:
    env_dir = ROOT / env_name(result.adk or result.version, result.suffix, result.python_version)
    python = env_dir / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    label = result.version.replace(" ", "-")
    log = log_dir / f"test-{label}.log"
    result.log = log
    log.write_text("")
    started = time.monotonic()
    junit = log_dir / f"junit-{label}.xml"
    if result.selection:  # (the core tests: each worker's collection costs as much as its tests)
        workers = min(workers, CORE_WORKERS)
    selection = list(result.selection) or selection
    code = _pytest(python, parallel_args(selection, workers) + selection, junit, log)
    failed = _count(junit, result)
    if code not in (0, 1) and not failed:  # usage error, collection error, crash
        result.note = f"pytest exited with {code} (see {log})"
    for attempt in range(rerun):
        if not failed:
            break
        again = log_dir / f"junit-{label}-rerun{attempt + 1}.xml"
        _pytest(python, failed, again, log)
        retry = Result(result.version)
        still = _count(again, retry)
        result.flaky += [test for test in failed if test not in still]
        result.passed += retry.passed
        result.skipped += retry.skipped
        failed = still
    result.failures = failed
    result.failed = len(failed)
    result.test_seconds = time.monotonic() - started
    return result


def _table(results: list[Result], wall: float) -> str:
    header = ("google-adk", "result", "passed", "failed", "skipped", "flaky", "install s", "test s")
    rows = [header]
    for r in results:
        status = "ok" if r.ok else ("error" if r.note else "FAILED")
        rows.append(
            (
                r.version + (" (core)" if r.selection else ""),
                status,
                str(r.passed),
                str(r.failed),
                str(r.skipped),
                str(len(r.flaky)),
                f"{r.install_seconds:.0f}",
                f"{r.test_seconds:.0f}",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = [" | ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    lines.append(f"total {wall:.0f} s")
    return "\n".join(lines)


def _submit_installs(
    pool: concurrent.futures.ThreadPoolExecutor,
    results: Iterable[tuple[str, Result]],
    log_dir: Path,
) -> dict[concurrent.futures.Future[tuple[float, str]], str]:
    """Build each ``(label, result)``'s environment in ``pool``, in order; the futures map to
    the labels."""
    return {
        pool.submit(_install, r.adk or v, "test", log_dir, r.pins, r.suffix, r.python_version): v
        for v, r in results
    }


def _install_all(results: dict[str, Result], jobs: int, log_dir: Path) -> None:
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        installs = _submit_installs(pool, results.items(), log_dir)
        for future in concurrent.futures.as_completed(installs):
            _built(results[installs[future]], future.result())


def _built(result: Result, outcome: tuple[float, str]) -> bool:
    """Record how building ``result``'s environment went (``(seconds, error or "")``), say
    it, and return whether it can be tested."""
    seconds, error = outcome
    result.install_seconds = seconds
    result.note = error
    state = "FAILED" if error else "ready"
    print(f"[matrix] {result.version}: environment {state} ({seconds:.0f} s)", flush=True)
    if error:
        print(error, flush=True)
    return not error


def _report(r: Result) -> None:
    status = "ok" if r.ok else "FAILED"
    print(
        f"[matrix] {r.version}: {status}: {r.passed} passed, {r.failed} failed, "
        f"{r.skipped} skipped, {len(r.flaky)} flaky ({r.test_seconds:.0f} s)",
        flush=True,
    )
    for test in r.flaky:
        print(f"[matrix] {r.version}:   flaky (passed on rerun): {test}", flush=True)
    if r.ok:
        return
    for test in r.failures:
        print(f"[matrix] {r.version}:   failed: {test}", flush=True)
    if r.note:
        print(f"[matrix] {r.version}:   {r.note}", flush=True)
    if r.log is not None:
        tail = r.log.read_text(errors="replace").splitlines()[-40:]
        print("\n".join(f"    {line}" for line in tail), flush=True)


def _build_and_test(
    results: dict[str, Result],
    selection: list[str],
    *,
    install_jobs: int,
    jobs: int,
    rerun: int,
    log_dir: Path,
    workers: int,
) -> None:
    """Build each environment (``install_jobs`` at a time) and test each release as soon as
    its environment is ready (``jobs`` at a time): the releases with the long selection are
    built first, so their tests start while the short ones are still being built."""
    ordered = sorted(
        ((v, r) for v, r in results.items() if not r.note),  # (a note: it cannot be built)
        key=lambda item: bool(item[1].selection),
    )
    with (
        concurrent.futures.ThreadPoolExecutor(install_jobs) as installs,
        concurrent.futures.ThreadPoolExecutor(jobs) as tests,
    ):
        built = _submit_installs(installs, ordered, log_dir)
        tested: list[concurrent.futures.Future[Result]] = []
        for future in concurrent.futures.as_completed(built):
            result = results[built[future]]
            if _built(result, future.result()):
                tested.append(tests.submit(_run_tests, result, selection, rerun, log_dir, workers))
        for done in concurrent.futures.as_completed(tested):
            _report(done.result())


def parse_index_versions(output: str, package: str = "google-adk") -> str:
    """The newest version in the output of ``pip index versions PACKAGE``."""
    match = re.search(rf"^{re.escape(package)} \(([^)]+)\)", output, re.MULTILINE)
    if match is None:
        raise ValueError(f"no version of {package} in pip's answer: {output.strip()[:200]!r}")
    return match.group(1).strip()


def newest_on_index(package: str = "google-adk") -> str:
    """Ask the package index (through pip) for the newest release of ``package``."""
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "index", "versions", package, "--disable-pip-version-check"],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"pip index versions {package} failed: {proc.stderr.strip()[:300]}")
    return parse_index_versions(proc.stdout, package)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--versions",
        help="comma-separated google-adk releases (default: %(default)s)",
        default=",".join(DEFAULT_VERSIONS),
    )
    parser.add_argument(
        "--exclude",
        default="",
        help="comma-separated releases to leave out (e.g. tested elsewhere)",
    )
    parser.add_argument(
        "--newest",
        action="store_true",
        help="also test the newest google-adk on the package index (beyond the tested range: "
        "install() warns and runs on feature detection there)",
    )
    parser.add_argument("--full", action="store_true", help="run the whole suite")
    parser.add_argument(
        "--core-only",
        default="",
        metavar="VERSIONS",
        help="comma-separated releases that run only the core resumption tests (-m core), "
        "for releases whose live loop another release of the same family tests end to end",
    )
    parser.add_argument(
        "--dependency-bounds",
        action="store_true",
        help="test each release with the oldest and the newest google-genai and websockets "
        "it allows (core resumption tests only)",
    )
    parser.add_argument("--jobs", type=int, default=1, help="releases tested at once")
    parser.add_argument("--install-jobs", type=int, default=2, help="environments built at once")
    parser.add_argument(
        "--rerun",
        type=int,
        default=0,
        help="reruns of a failed test, to tell a flake (reported, still a failure) from a bug",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=TEST_WORKERS,
        help="pytest-xdist workers per release (default %(default)s; 0: in order)",
    )
    parser.add_argument(
        "--python",
        help="build the environments with this Python (3.12, 3.13; a comma list tests each"
        " release under each, --jobs at a time)",
    )
    parser.add_argument(
        "--core-only-python",
        default="",
        metavar="VERSIONS",
        help="with --python: comma-separated interpreters under which only the core "
        "resumption tests run (another interpreter of the list runs the end-to-end ones)",
    )
    parser.add_argument(
        "--if-python-present",
        action="store_true",
        help="with --python: say so and exit 0 where that interpreter is missing",
    )
    parser.add_argument("--log-dir", type=Path, help="where logs go (default: a temp dir)")
    parser.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    args = parser.parse_args(argv)

    excluded = {v.strip() for v in args.exclude.split(",") if v.strip()}
    versions = [v.strip() for v in args.versions.split(",") if v.strip() not in excluded]
    versions = [v for v in versions if v]
    if args.newest:
        newest = newest_on_index()
        print(f"[matrix] newest google-adk on the index: {newest}", flush=True)
        if newest not in versions and newest not in excluded:
            versions.append(newest)
    if not versions:
        parser.error("no google-adk release left to test")
    pythons: list[str | None] = [p.strip() for p in (args.python or "").split(",") if p.strip()]
    if pythons and args.dependency_bounds:
        parser.error("--python and --dependency-bounds do not go together")
    for python in list(pythons):
        try:
            find_python(str(python))
        except MissingPython as missing:
            print(f"[matrix] {missing}", flush=True)
            if not args.if_python_present:
                return 2
            pythons.remove(python)
    if args.python and not pythons:
        return 0  # (--if-python-present: none of them is here)
    log_dir: Path = args.log_dir or Path(tempfile.mkdtemp(prefix="adk-matrix-"))
    log_dir.mkdir(parents=True, exist_ok=True)
    selection = ([] if args.full else list(E2E_SELECTION)) + list(args.pytest_args)
    what = "whole suite" if args.full else "end-to-end scenarios"
    started = time.monotonic()
    core_only = {v.strip() for v in args.core_only.split(",") if v.strip()}
    if core_only - set(versions):
        parser.error(
            f"--core-only names releases not tested: {', '.join(sorted(core_only - set(versions)))}"
        )
    core_pythons = frozenset(p.strip() for p in args.core_only_python.split(",") if p.strip())
    if core_pythons - {str(p) for p in pythons} and not args.if_python_present:
        parser.error(f"--core-only-python names interpreters not tested: {args.core_only_python}")
    results = plan(
        versions,
        pythons,
        core_only=set() if args.full else core_only,
        core_only_pythons=frozenset() if args.full else core_pythons,
    )
    if args.dependency_bounds:
        plain = dict(results)
        _install_all(plain, max(1, args.install_jobs), log_dir)  # to read each release's bounds
        results = {}
        for version in versions:
            if plain[version].note:
                results[version] = plain[version]
                continue
            requires = release_requires(version)
            bounds = [requirement_bounds(requires, package) for package in BOUND_PACKAGES]
            for which, index in (("oldest", 0), ("newest", 1)):
                pins = tuple(bound[index] for bound in bounds)
                label = f"{version} {which} deps"
                results[label] = Result(label, adk=version, pins=pins, suffix=f"-deps-{which}")
                print(f"[matrix] {label}: {' '.join(pins)}", flush=True)
        # the patch's guarantees; not stock ADK's documented failures (test_stock_adk.py),
        # whose exact exception types move with google-genai
        selection = list(CORE_SELECTION)
        selection += list(args.pytest_args)
        what = "core resumption tests, oldest and newest google-genai and websockets"
    print(f"[matrix] google-adk {', '.join(versions)}: {what}; logs in {log_dir}", flush=True)
    if core_only and not args.dependency_bounds and not args.full:
        print(f"[matrix] core resumption tests only: {', '.join(sorted(core_only))}", flush=True)
    if core_pythons and not args.full:
        print(f"[matrix] core resumption tests only under Python {', '.join(sorted(core_pythons))}")

    _build_and_test(
        results,
        selection,
        install_jobs=max(1, args.install_jobs),
        jobs=max(1, args.jobs),
        rerun=max(0, args.rerun),
        log_dir=log_dir,
        workers=args.workers,
    )

    ordered = list(results.values())
    print("\n" + _table(ordered, time.monotonic() - started), flush=True)
    return 0 if all(r.ok for r in ordered) else 1


if __name__ == "__main__":
    sys.exit(main())
