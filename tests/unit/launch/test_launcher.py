"""The zero-code launcher: ``adk-live-resume COMMAND`` and ``python -m adk_live_resume``.

Option parsing, policy resolution, the launch plan, and the in-process routes (a module, a
script file, a console script) are tested in this process; the two ways the patch reaches a
program are tested with real subprocesses (started together): ``-m MODULE`` in the launcher's
own process, and ``python app.py`` as a child process patched by the bootstrap
``sitecustomize``. Both run a live conversation that survives a dropped socket.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import adk_live_resume
from adk_live_resume import ResumePolicy
from adk_live_resume.launch import launcher
from adk_live_resume.launch.launcher import LauncherError
from adk_live_resume.testing.children import reap, spawn

ROOT = Path(__file__).resolve().parents[3]

# ---- in-process: parsing, policy, plan --------------------------------------------------------


def test_split_argv() -> None:
    split = launcher.split_argv
    assert split(["--max-attempts", "3", "adk", "web", "--port", "1"]) == (
        ["--max-attempts", "3"],
        None,
        ["adk", "web", "--port", "1"],
    )
    assert split(["-v", "-m", "pkg.mod", "-x", "--y"]) == (["-v"], "pkg.mod", ["-x", "--y"])
    assert split(["-mpkg", "a"]) == ([], "pkg", ["a"])
    assert split(["--go-away-margin=2", "--", "--weird-cmd"]) == (
        ["--go-away-margin=2"],
        None,
        ["--weird-cmd"],
    )
    assert split([]) == ([], None, [])
    with pytest.raises(LauncherError, match="unknown option --nope"):
        split(["--nope", "adk"])
    with pytest.raises(LauncherError, match="-m needs a module"):
        split(["-m"])


def test_policy_precedence_defaults_env_json_flags() -> None:
    assert launcher.resolve_policy({}) == ResumePolicy()
    env = {
        "ADK_LIVE_RESUME_POLICY_JSON": '{"max_attempts": 2, "go_away_margin": 1, "jitter": false}',
        "ADK_LIVE_RESUME_MAX_ATTEMPTS": "4",
        "ADK_LIVE_RESUME_RETRYABLE_CLOSE_CODES": "1000, 1011",
        "ADK_LIVE_RESUME_OUTAGE_TIMEOUT": "30",
    }
    policy = launcher.resolve_policy(env)
    assert policy.max_attempts == 4 and policy.go_away_margin == 1.0 and policy.jitter is False
    assert policy.retryable_close_codes == frozenset({1000, 1011})
    assert policy.outage_timeout == 30.0
    policy = launcher.resolve_policy(
        env, policy_json='{"max_attempts": 6}', flags={"max_attempts": None, "outage_timeout": 9}
    )
    assert policy.max_attempts == 6 and policy.outage_timeout == 9


@pytest.mark.parametrize(
    ("env", "json_text", "message"),
    [
        ({"ADK_LIVE_RESUME_MAX_ATTEMPTS": "many"}, None, "must be an integer"),
        ({"ADK_LIVE_RESUME_JITTER": "perhaps"}, None, "true or false"),
        ({}, '{"max_atempts": 3}', "unknown ResumePolicy field"),
        ({}, "[1, 2]", "JSON object"),
        ({}, "{", "not valid JSON"),
        ({}, '{"max_attempts": 0}', "max_attempts must be >= 1"),
        ({}, '{"max_attempts": true}', "must be an integer"),
    ],
)
def test_bad_policies_are_clear_errors(
    env: dict[str, str], json_text: str | None, message: str
) -> None:
    with pytest.raises(LauncherError, match=message):
        launcher.resolve_policy(env, policy_json=json_text)


def test_policy_json_round_trips() -> None:
    policy = ResumePolicy(max_attempts=3, retryable_close_codes=frozenset({1011}), jitter=False)
    text = launcher.policy_to_json(policy)
    assert launcher.resolve_policy({}, policy_json=text) == policy
    assert launcher.resolve_policy({launcher.POLICY_JSON_ENV: text}) == policy


def test_bootstrap_environment_prepends_once_and_hands_down_the_policy() -> None:
    env = {"PYTHONPATH": os.pathsep.join(["/a", str(launcher.BOOTSTRAP_DIR), "/b"])}
    policy = ResumePolicy(max_attempts=2)
    launcher.bootstrap_environment(env, policy, strict=False)
    assert env["PYTHONPATH"].split(os.pathsep) == [str(launcher.BOOTSTRAP_DIR), "/a", "/b"]
    assert launcher.resolve_policy({}, policy_json=env[launcher.BOOTSTRAP_POLICY_ENV]) == policy
    assert env[launcher.STRICT_ENV] == "0" and not launcher.strict_from(env)
    assert (launcher.BOOTSTRAP_DIR / "sitecustomize.py").is_file()


@pytest.mark.timeout(60)
def test_the_bootstrap_is_silent_in_a_python_without_the_package_until_it_imports_adk(
    tmp_path: Path,
) -> None:
    """An app may start another interpreter (it inherits ``PYTHONPATH``) that cannot import
    adk_live_resume: it hears nothing unless it imports ADK, which it is then told."""
    base = getattr(sys, "_base_executable", "") or shutil.which("python3") or ""
    env = {**os.environ, "PYTHONPATH": str(launcher.BOOTSTRAP_DIR), "PYTHONNOUSERSITE": "1"}
    env.pop("PYTHONSTARTUP", None)

    def run(code: str, *extra: str) -> subprocess.CompletedProcess[str]:
        env["PYTHONPATH"] = os.pathsep.join([str(launcher.BOOTSTRAP_DIR), *extra])
        return subprocess.run(
            [base, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
        )

    probe = run("import adk_live_resume")
    if probe.returncode == 0:
        pytest.skip(f"{base} can import adk_live_resume: no interpreter without it here")
    quiet = run("print('no adk here')")
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "no adk here\n", "")
    # the control: the same Python importing a (stand-in) google.adk is told
    (tmp_path / "stand_in" / "google" / "adk").mkdir(parents=True)
    (tmp_path / "stand_in" / "google" / "adk" / "__init__.py").write_text("")
    told = run("import google.adk; print('imported')", str(tmp_path / "stand_in"))
    assert told.returncode == 0 and told.stdout == "imported\n"
    assert "adk-live-resume: not installed in process" in told.stderr


def test_install_from_environment_prefers_the_handed_down_policy() -> None:
    env = {
        launcher.BOOTSTRAP_POLICY_ENV: launcher.policy_to_json(ResumePolicy(max_attempts=2)),
        "ADK_LIVE_RESUME_MAX_ATTEMPTS": "7",
    }
    launcher.install_from_environment(env)
    assert adk_live_resume.installed_policy() == ResumePolicy(max_attempts=2)
    adk_live_resume.uninstall()
    launcher.install_from_environment({"ADK_LIVE_RESUME_MAX_ATTEMPTS": "7"})
    assert adk_live_resume.installed_policy() == ResumePolicy(max_attempts=7)


def test_plan_launch(tmp_path: Path) -> None:
    script = tmp_path / "app.py"
    script.write_text("")
    assert launcher.plan_launch("pkg.mod", ["a"]) == launcher.Launch(
        "module", "pkg.mod", ("pkg.mod", "a")
    )
    assert launcher.plan_launch(None, [str(script), "x"]).kind == "script"
    python = launcher.plan_launch(None, ["python", "app.py"])
    assert python.kind == "exec" and python.target == sys.executable
    adk = launcher.plan_launch(None, ["adk", "web"])  # google-adk's console script
    assert adk.kind == "console_script" and adk.target == "google.adk.cli:main"
    assert adk.in_process and adk.argv[1:] == ("web",)
    with pytest.raises(LauncherError, match="no command given"):
        launcher.plan_launch(None, [])
    with pytest.raises(LauncherError, match="command not found: no-such-command-x"):
        launcher.plan_launch(None, ["no-such-command-x"])


def test_main_reports_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert launcher.main([]) == 2
    assert "no command given" in capsys.readouterr().err
    assert launcher.main(["--max-attempts", "0", "python"]) == 2
    assert "max_attempts must be >= 1" in capsys.readouterr().err
    assert launcher.main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("adk-live-resume ")


def test_main_runs_a_module_in_process_after_installing(
    tmp_path: Path, launcher_sandbox: None, capsys: pytest.CaptureFixture[str]
) -> None:
    sys.path.insert(0, str(tmp_path))  # launcher_sandbox restores sys.path
    (tmp_path / "launched_mod.py").write_text(
        "import sys, adk_live_resume\n"
        "print('ran', __name__, sys.argv[1:], adk_live_resume.installed_policy().max_attempts)\n"
    )
    assert launcher.main(["--max-attempts", "4", "-m", "launched_mod", "x", "--y"]) == 0
    assert capsys.readouterr().out == "ran __main__ ['x', '--y'] 4\n"
    assert os.environ["PYTHONPATH"].split(os.pathsep)[0] == str(launcher.BOOTSTRAP_DIR)
    adk_live_resume.uninstall()
    assert launcher.main(["-m", "no_such_module_here"]) == 2
    assert "no module named no_such_module_here" in capsys.readouterr().err


def test_pyproject_declares_the_console_script() -> None:
    text = (ROOT / "pyproject.toml").read_text()
    assert '[project.scripts]\nadk-live-resume = "adk_live_resume.launch.launcher:main"' in text


# ---- real subprocesses -------------------------------------------------------------------------

CONVERSATION = textwrap.dedent(
    """
    import sys

    print("adk loaded at start", "google.adk" in sys.modules)
    print("argv", sys.argv[1:])

    import asyncio

    from google.adk.agents import LlmAgent  # a child process installs right here

    import adk_live_resume
    from adk_live_resume.testing import FakeLiveServer
    from adk_live_resume.testing.driver import LiveDriver


    async def main() -> None:
        print("installed", adk_live_resume.is_installed())
        print("max_attempts", adk_live_resume.installed_policy().max_attempts)
        async with FakeLiveServer() as server:
            agent = LlmAgent(name="assistant", model=server.gemini())  # a plain LlmAgent
            async with await LiveDriver.start(agent) as live:
                print(await live.say("one"))
                await server.restart()  # every socket dies, no close frame
                await server.wait_for_connections(2)
                print(await live.say("two"))
                print(await live.say("recall"))
                print("ended", await live.close())
            print("connections", len(server.connections), server.connections[1].resumed)


    asyncio.run(main())
    """
)

SURVIVED = [
    "installed True",
    "max_attempts 3",
    "echo: one",
    "echo: two",
    "you said: one | two",
    "ended None",
    "connections 2 True",
]


def _launch(*args: str, cwd: Path) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ADK_LIVE_RESUME_")}
    env.pop("PYTHONPATH", None)
    return spawn(
        [sys.executable, "-W", "ignore", "-m", "adk_live_resume", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, tuple[int, str, str]]]:
    """Two real launches, run side by side: in this process (``-m``) and in a child python."""
    work = tmp_path_factory.mktemp("launcher")
    (work / "conversation.py").write_text(CONVERSATION)
    procs = {
        "in_process": _launch("--max-attempts=3", "-m", "conversation", "a", "--b", cwd=work),
        "child": _launch(
            "--policy-json", '{"max_attempts": 3}', "python", "conversation.py", "c", cwd=work
        ),
    }
    results: dict[str, tuple[int, str, str]] = {}
    try:
        for name, proc in procs.items():
            out, err = proc.communicate(timeout=150)
            results[name] = (proc.returncode, out, err)
        yield results
    finally:
        for proc in procs.values():
            reap(proc, signal.SIGKILL)


def _ok(result: tuple[int, str, str]) -> list[str]:
    code, out, err = result
    assert code == 0, f"exit {code}\nstdout:\n{out}\nstderr:\n{err[-3000:]}"
    return out.splitlines()


@pytest.mark.timeout(180)
def test_dash_m_module_runs_in_process_and_its_conversation_survives_a_drop(
    runs: dict[str, tuple[int, str, str]],
) -> None:
    lines = _ok(runs["in_process"])
    # the launcher imported ADK and installed before running the module
    assert lines == ["adk loaded at start True", "argv ['a', '--b']", *SURVIVED]


@pytest.mark.timeout(180)
def test_a_child_python_installs_on_import_of_adk_and_its_conversation_survives_a_drop(
    runs: dict[str, tuple[int, str, str]],
) -> None:
    lines = _ok(runs["child"])
    # nothing heavy at start-up: the bootstrap waits for the import of google.adk
    assert lines == ["adk loaded at start False", "argv ['c']", *SURVIVED]


def test_a_console_script_runs_in_the_same_process(
    launcher_sandbox: None, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:  # click's standalone mode exits itself
        launcher.main(["-v", "adk", "--version"])
    assert exit_info.value.code in (0, None)
    captured = capsys.readouterr()
    assert "version" in captured.out
    assert "running console_script google.adk.cli:main in this process" in captured.err
    assert adk_live_resume.is_installed()


def test_a_script_file_runs_in_process(
    tmp_path: Path, launcher_sandbox: None, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "app.py"
    script.write_text(
        "import sys, adk_live_resume\n"
        "print(__name__, sys.argv[1:], adk_live_resume.installed_policy().go_away_margin)\n"
    )
    assert launcher.main(["--go-away-margin", "2.5", str(script), "z"]) == 0
    assert capsys.readouterr().out == "__main__ ['z'] 2.5\n"
    assert sys.path[0] == str(tmp_path)


@pytest.mark.timeout(60)
def test_the_installed_console_script_if_present() -> None:
    script = shutil.which("adk-live-resume", path=str(Path(sys.executable).parent))
    if script is None:
        pytest.skip("console script not installed yet: reinstall the project (pip install -e .)")
    proc = subprocess.run([script, "--version"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.startswith("adk-live-resume ")


def test_policy_json_output_is_json() -> None:
    assert json.loads(launcher.policy_to_json(ResumePolicy()))["max_attempts"] == 8
