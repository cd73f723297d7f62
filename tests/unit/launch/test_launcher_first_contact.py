"""The launcher with apps that call install() themselves, options in the wrong place, help."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import adk_live_resume
from adk_live_resume import ResumePolicy
from adk_live_resume.launch import launcher
from adk_live_resume.launch.launcher import LauncherError


@pytest.mark.parametrize(
    "argv",
    [
        ["adk", "api_server", "--max-attempts", "5"],
        ["adk", "api_server", "--go-away-margin=10"],
        ["python", "app.py", "--no-strict"],
        ["-m", "mypkg.server", "--policy-json", "{}"],
    ],
)
def test_launcher_options_after_the_command_say_to_move_them(argv: list[str]) -> None:
    with pytest.raises(LauncherError, match=r"comes after the command .*before the command"):
        launcher.split_argv(argv)


def test_after_a_double_dash_the_command_gets_every_word() -> None:
    argv = ["--max-attempts", "3", "--", "tool", "--max-attempts", "9"]
    assert launcher.split_argv(argv) == (["--max-attempts", "3"], None, argv[3:])
    # the command's own options that are not ours stay the command's
    assert launcher.split_argv(["adk", "web", "--port", "8000", "-v"])[2] == [
        "adk",
        "web",
        "--port",
        "8000",
        "-v",
    ]


def test_main_reports_a_late_option_as_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert launcher.main(["adk", "api_server", "--max-attempts", "5"]) == 2
    err = capsys.readouterr().err
    assert "--max-attempts comes after the command 'adk'" in err
    assert "adk-live-resume --max-attempts ... adk ..." in err


def test_every_flag_has_help_and_its_default() -> None:
    parser = launcher.build_parser()
    defaults = ResumePolicy()
    for action in parser._actions:
        if not action.option_strings:
            continue
        assert action.help, action.option_strings
        assert "default" in action.help or action.option_strings == ["-h", "--help"], action.help
    text = parser.format_help()
    assert f"(default {defaults.max_attempts})" in text
    assert f"(default {defaults.go_away_margin:g} s)" in text
    assert "Options go BEFORE the command" in " ".join(text.split())


def test_an_app_that_installs_its_own_policy_runs_under_the_launcher(
    tmp_path: Path, launcher_sandbox: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """One rule: the first install (the launcher's) wins; the app's call warns, never crashes."""
    script = tmp_path / "app.py"
    script.write_text(
        "import logging, adk_live_resume\n"
        "from adk_live_resume import ResumePolicy\n"
        "logging.basicConfig(level=logging.WARNING, format='%(levelname)s %(message)s')\n"
        "adk_live_resume.install(ResumePolicy(max_attempts=2))\n"
        "print('app ran', adk_live_resume.installed_policy().max_attempts)\n"
    )
    assert launcher.main(["--max-attempts", "6", str(script)]) == 0
    captured = capsys.readouterr()
    assert captured.out == "app ran 6\n"
    assert adk_live_resume.installed_policy() == ResumePolicy(max_attempts=6)


@pytest.mark.timeout(120)
def test_an_app_that_installs_its_own_policy_in_a_child_process(tmp_path: Path) -> None:
    script = tmp_path / "app.py"
    script.write_text(
        "import logging\n"
        "logging.basicConfig(level=logging.WARNING, format='%(levelname)s %(message)s')\n"
        "import google.adk  # the launcher's start-up hook installs here\n"
        "import adk_live_resume\n"
        "from adk_live_resume import ResumePolicy\n"
        "adk_live_resume.install(ResumePolicy(max_attempts=2))\n"
        "print('app ran', adk_live_resume.installed_policy().max_attempts)\n"
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "adk_live_resume",
            "--max-attempts",
            "6",
            "--",
            "python",
            str(script),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "app ran 6\n"
    assert "WARNING adk_live_resume is already installed" in proc.stderr
    assert "first install wins" in proc.stderr


@pytest.mark.timeout(60)
def test_the_fake_server_module_helps_instead_of_running_the_demo() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "adk_live_resume.testing", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "usage:" in proc.stdout and "fake" in proc.stdout
    assert "connected" not in proc.stdout  # the demo did not run
