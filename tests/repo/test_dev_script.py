"""scripts/dev.py: every reproduction flag reaches scripts/reproduce_timeout.py."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("dev_script", ROOT / "scripts" / "dev.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    "flags",
    [
        ["--help"],
        ["-h"],
        ["--drop", "goaway", "--audio", "--json", "--quiet"],
        ["--real-time", "--gemini", "gemini-live-2.5-flash", "--answer-timeout", "30"],
        ["--time-scale", "0.02", "--drop-after-turn", "3", "--turns", "9", "--verbose"],
    ],
)
def test_demo_passes_every_flag_through(flags: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    dev = _load()
    envs: list[tuple[str, str | None]] = []
    commands: list[list[str]] = []
    monkeypatch.setattr(
        dev, "ensure_env", lambda extras, adk: envs.append((extras, adk)) or Path(sys.executable)
    )
    monkeypatch.setattr(dev, "_run", lambda cmd: commands.append(cmd) or 0)
    assert dev.main(["demo", "--adk", "1.27.2", *flags]) == 0
    assert envs == [(dev.DEV_EXTRAS, "1.27.2")]
    assert commands == [[sys.executable, str(ROOT / "scripts" / "reproduce_timeout.py"), *flags]]


def test_matrix_reads_the_newest_release_from_pips_answer() -> None:
    matrix = _load_matrix()
    answer = "google-adk (2.14.1)\nAvailable versions: 2.14.1, 2.14.0, 2.13.0\n"
    assert matrix.parse_index_versions(answer) == "2.14.1"
    with pytest.raises(ValueError, match="no version of google-adk"):
        matrix.parse_index_versions("ERROR: No matching distribution found for google-adk")


def test_bench_runs_one_benchmark_or_all_and_refuses_an_unknown_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    dev = _load()
    commands: list[list[str]] = []
    monkeypatch.setattr(dev, "ensure_env", lambda extras, adk: Path(sys.executable))
    monkeypatch.setattr(dev, "_run", lambda cmd: commands.append(cmd) or 0)
    monkeypatch.setattr(dev, "benchmark_names", lambda: ["memory", "resume_gap"])
    assert dev.main(["bench", "all", "--quick"]) == 0
    assert [c[1:] for c in commands] == [
        [str(ROOT / "benchmarks" / "memory.py"), "--quick"],
        [str(ROOT / "benchmarks" / "resume_gap.py"), "--quick"],
    ]
    assert dev.main(["bench", "nope"]) == 2


def test_the_dependency_bounds_come_from_a_release_s_requirements() -> None:
    matrix = _load_matrix()
    requires = [
        "PyYAML>=6.0",
        "google-genai>=1.56.0, <2.0.0",
        "websockets (>=15.0.1,<16)",
        "pytest; extra == 'test'",
    ]
    assert matrix.requirement_bounds(requires, "google-genai") == (
        "google-genai==1.56.0",
        "google-genai>=1.56.0,<2.0.0",
    )
    assert matrix.requirement_bounds(requires, "websockets") == (
        "websockets==15.0.1",
        "websockets>=15.0.1,<16",
    )
    with pytest.raises(ValueError, match="not among"):
        matrix.requirement_bounds(requires, "httpx")
    with pytest.raises(ValueError, match="no >= lower bound"):
        matrix.requirement_bounds(["google-genai<3"], "google-genai")


def test_conformance_runs_the_service_suite(monkeypatch: pytest.MonkeyPatch) -> None:
    dev = _load()
    commands: list[list[str]] = []
    monkeypatch.setattr(dev, "ensure_env", lambda extras, adk: Path(sys.executable))
    monkeypatch.setattr(dev, "_run", lambda cmd: commands.append(cmd) or 0)
    assert dev.main(["conformance", "-k", "handle"]) == 0
    assert commands == [
        [sys.executable, "-m", "pytest", "-m", "service", "-rsx", "tests/service", "-k", "handle"]
    ]


def test_conformance_report_runs_the_suite_with_junit_then_writes_the_report(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    dev = _load()
    commands: list[list[str]] = []
    monkeypatch.setattr(dev, "ensure_env", lambda extras, adk: Path(sys.executable))
    monkeypatch.setattr(dev, "_run", lambda cmd: commands.append(cmd) or 0)
    assert dev.main(["conformance", "--report", "out.md"]) == 0
    suite, report = commands
    assert suite[:7] == [sys.executable, "-m", "pytest", "-m", "service", "-rsx", "tests/service"]
    assert suite[-1].startswith("--junitxml=") and suite[-1].endswith("results.xml")
    assert report == [
        sys.executable,
        str(ROOT / "scripts" / "conformance_report.py"),
        suite[-1].removeprefix("--junitxml="),
        "out.md",
    ]


def _report_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "conformance_report", ROOT / "scripts" / "conformance_report.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (its dataclasses look their module up)
    spec.loader.exec_module(module)
    return module


JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="tests.service.t" name="test_handles_are_uuids[fake]"><properties>
<property name="model" value="gemini-live-fake"/></properties></testcase>
<testcase classname="tests.service.t" name="test_x[fake-vertex-TEXT-True]">
<failure message="AssertionError: newHandle='0123456789abcdef0123' was not a UUID">
the handle 3f2b8c1e-1d2c-4b5a-9e8f-0123456789ab, x-goog-api-key: AIzaSyREALKEY9</failure></testcase>
<testcase classname="tests.service.m" name="test_names_agree[TEXT]"/>
<testcase classname="tests.service.t" name="test_handles_are_uuids[real]">
<skipped message="no GOOGLE_API_KEY (or Vertex credentials) set: the real service is not
tried"/></testcase></testsuite></testsuites>"""


def test_the_conformance_report_counts_per_target_and_redacts_failures() -> None:
    report = _report_module()
    cases = report.read_cases(JUNIT)
    assert [(c.target, c.outcome) for c in cases] == [
        ("fake", "passed"),
        ("fake-vertex", "failed"),
        ("-", "passed"),
        ("real", "skipped"),
    ]
    text = report.render(cases, versions={"google-genai": "2.34.0"}, when="now")
    assert "| fake | 1 | 0 | 0 | 0 |" in text and "| fake-vertex | 0 | 1 | 0 | 0 |" in text
    assert "The real service was not tried: no GOOGLE_API_KEY" in text
    assert "### `test_x[fake-vertex-TEXT-True]` (failed)" in text
    assert "0123456789abcdef0123" not in text and "1d2c-4b5a" not in text
    assert "AIzaSyREALKEY9" not in text and "3f2b8c1e-…" in text


def test_the_conformance_report_lists_every_case_with_its_outcome_per_target() -> None:
    report = _report_module()
    cases = report.read_cases(JUNIT)
    assert [c.model for c in cases] == ["gemini-live-fake", "", "", ""]
    assert [c.case for c in cases] == [
        "t::test_handles_are_uuids",
        "t::test_x[TEXT-True]",
        "m::test_names_agree[TEXT]",
        "t::test_handles_are_uuids",
    ]
    text = report.render(cases, versions={}, when="now")
    table = text.partition("## Cases")[2].partition("## Failures")[0].strip().splitlines()
    assert table == [
        "| case | no target | fake | fake-vertex | real |",
        "|---|---|---|---|---|",
        "| `t::test_handles_are_uuids` |  | passed (gemini-live-fake) |  | skipped |",
        "| `t::test_x[TEXT-True]` |  |  | failed |  |",
        "| `m::test_names_agree[TEXT]` | passed |  |  |  |",
    ]


def test_docs_builds_the_site_strict_into_site(monkeypatch: pytest.MonkeyPatch) -> None:
    dev = _load()
    commands: list[list[str]] = []
    envs: list[str] = []
    monkeypatch.setattr(dev, "ensure_env", lambda extras, adk: envs.append(extras) or Path("py"))
    monkeypatch.setattr(dev, "_run", lambda cmd: commands.append(cmd) or 0)
    assert dev.main(["docs"]) == 0
    assert commands == [
        ["py", "-m", "mkdocs", "build", "--strict", "--site-dir", str(ROOT / "site")]
    ]
    assert envs == [dev.DEV_EXTRAS] and "docs" in dev.DEV_EXTRAS.split(",")


def _recording(
    dev: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> list[tuple[list[str], dict[str, str] | None]]:
    """Make ``dev`` record its commands (and their environment) instead of running them."""
    commands: list[tuple[list[str], dict[str, str] | None]] = []
    monkeypatch.setattr(dev, "ensure_env", lambda extras, adk, **_: Path("py"))
    monkeypatch.setattr(dev, "_run", lambda cmd, env=None: commands.append((cmd, env)) or 0)
    return commands


def test_test_runs_every_test_but_the_soaks_in_parallel(monkeypatch: pytest.MonkeyPatch) -> None:
    dev = _load()
    commands = _recording(dev, monkeypatch)
    assert dev.main(["test"]) == 0
    assert dev.main(["test", "tests/unit/conversation/test_outbox.py", "-x"]) == 0
    assert dev.main(["test", "--workers", "0", "-k", "resume"]) == 0
    assert dev.main(["test", "-p", "no:xdist"]) == 0
    parallel = ["-n", str(dev.TEST_WORKERS), "--dist", "worksteal"]
    two = ["-n", "2", "--dist", "worksteal"]
    assert dev.main(["test", "-m", "not e2e"]) == 0
    assert dev.main(["test", "--workers", "2", "tests/unit/conversation/test_outbox.py"]) == 0
    assert [cmd for cmd, _ in commands] == [
        ["py", "-m", "pytest", *parallel, "-m", "not soak"],
        ["py", "-m", "pytest", "-m", "not soak", "tests/unit/conversation/test_outbox.py", "-x"],
        ["py", "-m", "pytest", "-m", "not soak", "-k", "resume"],
        ["py", "-m", "pytest", "-m", "not soak", "-p", "no:xdist"],
        ["py", "-m", "pytest", *parallel, "-m", "(not soak) and (not e2e)"],
        ["py", "-m", "pytest", *two, "-m", "not soak", "tests/unit/conversation/test_outbox.py"],
    ]


def test_soak_sets_its_seeds_and_load_and_runs_the_pinned_seeds_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    dev = _load()
    commands = _recording(dev, monkeypatch)
    assert dev.main(["soak"]) == 0
    assert dev.main(["soak", "--seeds", "2000", "--first-seed", "200", "--load", "2"]) == 0
    assert dev.main(["soak", "--workers", "3", "tests/soak/test_chaos.py"]) == 0
    (plain, plain_env), (_, long_env), (one, _) = commands
    assert plain[-5:] == [
        "-m",
        "chaos",
        "tests/soak/test_chaos.py",
        "tests/soak/test_voice_chaos.py",
        "tests/soak/test_workers_chaos.py",
    ]
    assert plain_env is not None and "ADK_LIVE_RESUME_VOICE_CHAOS_RUNS" not in {
        k for k in plain_env if plain_env[k] != dev.os.environ.get(k)
    }
    assert long_env is not None
    assert long_env["ADK_LIVE_RESUME_VOICE_CHAOS_RUNS"] == long_env["ADK_LIVE_RESUME_CHAOS_RUNS"]
    assert long_env["ADK_LIVE_RESUME_CHAOS_RUNS"] == "2000"
    assert long_env["ADK_LIVE_RESUME_WORKERS_CHAOS_RUNS"] == "2000"
    assert long_env["ADK_LIVE_RESUME_VOICE_CHAOS_FIRST_SEED"] == "200"
    assert long_env["ADK_LIVE_RESUME_CHAOS_LOAD"] == "2"
    parallel = ["-n", "3", "--dist", "worksteal"]
    assert one == ["py", "-m", "pytest", *parallel, "-m", "chaos", "tests/soak/test_chaos.py"]
    assert dev.main(["soak", "-m", "soak"]) == 0
    assert commands[-1][0][3:7] == ["-n", str(dev.TEST_WORKERS), "--dist", "worksteal"]
    assert commands[-1][0][7:9] == ["-m", "(chaos) and (soak)"]


def test_a_missing_interpreter_is_named_and_skipped_only_when_asked(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    dev = _load()
    monkeypatch.setattr(dev.shutil, "which", lambda name: None)
    with pytest.raises(dev.MissingPython, match=r"Python 3\.99 is not installed here"):
        dev.find_python("3.99")
    with pytest.raises(dev.MissingPython, match=r"such as 3\.12"):
        dev.find_python("twelve")
    monkeypatch.setattr(dev, "_run", lambda cmd, env=None: pytest.fail("ran without Python"))
    assert dev.main(["test", "--python", "3.99"]) == 2
    assert dev.main(["test", "--python", "3.99", "--if-python-present"]) == 0
    assert "Python 3.99 is not installed here" in capsys.readouterr().out
    assert dev.env_name("2.13.0", "", "3.13") == ".venv-adk-2.13.0-py3.13"


def test_a_core_only_release_runs_the_core_tests_and_the_others_the_end_to_end_ones() -> None:
    matrix = _load_matrix()
    planned = matrix.plan(["1.28.1", "1.39.1"], [None, "3.13"], core_only={"1.28.1"})
    assert list(planned) == ["1.28.1", "1.28.1 py3.13", "1.39.1", "1.39.1 py3.13"]
    assert planned["1.28.1 py3.13"].selection == ("tests", "-m", "core")
    assert planned["1.39.1"].selection == ()  # (the run's own: the end-to-end scenarios)
    with pytest.raises(SystemExit):  # (a release named core-only must be one tested)
        matrix.main(["--versions", "1.39.1", "--core-only", "1.28.1"])


def test_an_interpreter_named_core_only_runs_the_core_tests_there() -> None:
    matrix = _load_matrix()
    planned = matrix.plan(
        ["2.13.0"], ["3.12", "3.13"], core_only=set(), core_only_pythons=frozenset({"3.12"})
    )
    assert planned["2.13.0 py3.12"].selection == ("tests", "-m", "core")
    assert planned["2.13.0 py3.13"].selection == ()


def test_a_release_is_tested_as_soon_as_its_environment_is_built(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    matrix = _load_matrix()
    events: list[str] = []
    built = {"2.3.0": threading.Event()}

    def install(version: str, *args: object) -> tuple[float, str]:
        events.append(f"build {version}")
        if version == "2.6.3":  # (the short one: built while the long one is tested)
            assert built["2.3.0"].wait(10), "the long release was not tested before"
        return 1.0, "" if version != "9.9.9" else "no such release"

    def run_tests(result: Any, *args: object) -> Any:
        events.append(f"test {result.version}")
        if result.version == "2.3.0":
            built["2.3.0"].set()
        result.passed = 1
        return result

    monkeypatch.setattr(matrix, "_install", install)
    monkeypatch.setattr(matrix, "_run_tests", run_tests)
    results = matrix.plan(["2.6.3", "2.3.0", "9.9.9"], [None], core_only={"2.6.3"})
    matrix._build_and_test(
        results, [], install_jobs=1, jobs=2, rerun=0, log_dir=tmp_path, workers=0
    )
    assert events.index("build 2.3.0") < events.index("build 2.6.3")  # (the long one first)
    assert "test 9.9.9" not in events and results["9.9.9"].note == "no such release"
    assert results["2.6.3"].passed == results["2.3.0"].passed == 1


def test_an_environment_left_without_pip_is_built_again(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    dev = _load()
    monkeypatch.setattr(dev, "ROOT", tmp_path)
    (tmp_path / "pyproject.toml").write_bytes((ROOT / "pyproject.toml").read_bytes())
    env_dir = tmp_path / ".venv-adk-9.9.9"
    dev.venv.EnvBuilder(with_pip=False).create(env_dir)  # (a build killed before pip got in)
    created: list[Path] = []
    commands: list[list[str]] = []

    real_create = dev.venv.EnvBuilder.create

    def create(builder: object, where: str | Path) -> None:
        created.append(Path(where))
        real_create(dev.venv.EnvBuilder(with_pip=False, clear=True), where)

    def run(cmd: list[str], **_: object) -> subprocess.CompletedProcess[bytes]:
        commands.append(cmd)
        return subprocess.CompletedProcess(cmd, 1 if cmd[-1] == "--version" else 0)

    monkeypatch.setattr(dev.venv.EnvBuilder, "create", create)
    monkeypatch.setattr(dev.subprocess, "run", run)
    dev.ensure_env("test", "9.9.9")
    assert created == [env_dir]
    assert commands[0][1:] == ["-m", "pip", "--version"]
    assert any("google-adk==9.9.9" in c for c in commands)


def _load_matrix() -> ModuleType:
    """scripts/matrix.py as a module (once: its dataclasses look their module up)."""
    matrix = sys.modules.get("matrix_script")
    if matrix is not None:
        return matrix
    spec = importlib.util.spec_from_file_location("matrix_script", ROOT / "scripts" / "matrix.py")
    assert spec is not None and spec.loader is not None
    matrix = importlib.util.module_from_spec(spec)
    sys.modules["matrix_script"] = matrix
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        spec.loader.exec_module(matrix)
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    return matrix
