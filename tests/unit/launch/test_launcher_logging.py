"""The INFO line saying the patch is active shows where ADK's own lines go, under the launcher.

The launcher installs the patch at interpreter start (in this process for the ``adk``
console script; on import of ``google.adk`` in a child Python, for a command it execs),
before ADK's CLI sets logging up: a real ``adk api_server`` subprocess must still print the
line, formatted by ADK's logging set-up, before it serves. The ``ADK_LIVE_RESUME_*``
variables set for it are applied (the line shows them) and no WARNING calls them ignored.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

import adk_live_resume
from adk_live_resume.testing.children import reap, spawn

AGENT = textwrap.dedent(
    """
    from google.adk.agents import LlmAgent

    root_agent = LlmAgent(name="voice", model="gemini-live-fake")
    """
)

LINE = "adk_live_resume installed on google-adk"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _serve_and_read_log(command: list[str], tmp: Path, port: int, variables: dict[str, str]) -> str:
    """Start ``command`` (an api_server on ``port``) with the environment ``variables``, wait
    until it serves, stop it; its output."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ADK_LIVE_RESUME_")}
    env["PYTHONPATH"] = str(Path(adk_live_resume.__file__).resolve().parents[1])  # this code
    env.update(variables)
    log = tmp / "server.log"
    with log.open("wb") as out:
        proc = spawn(command, cwd=tmp, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"the server exited:\n{log.read_text(errors='replace')}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/list-apps", timeout=5):
                    break
            except (OSError, urllib.error.URLError):
                if time.monotonic() > deadline:
                    raise AssertionError(
                        f"the server never served:\n{log.read_text(errors='replace')}"
                    ) from None
                time.sleep(0.25)
    finally:
        reap(proc, grace=10)
    return log.read_text(errors="replace")


@pytest.mark.timeout(150)
@pytest.mark.parametrize(
    "runner",
    [["adk"], ["python", "-m", "google.adk.cli"]],
    ids=["console-script-in-process", "exec-child-python"],
)
def test_the_install_line_shows_in_adk_api_servers_output(
    tmp_path: Path, runner: list[str]
) -> None:
    (tmp_path / "agents" / "voice").mkdir(parents=True)
    (tmp_path / "agents" / "voice" / "__init__.py").write_text("from . import agent\n")
    (tmp_path / "agents" / "voice" / "agent.py").write_text(AGENT)
    port = _free_port()
    command = [
        sys.executable,
        "-W",
        "ignore",
        "-m",
        "adk_live_resume",  # the launcher: adk-live-resume adk api_server ...
        *runner,
        "api_server",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--no-reload",
        str(tmp_path / "agents"),
    ]
    variables = {"ADK_LIVE_RESUME_STALL_TIMEOUT": "3", "ADK_LIVE_RESUME_MAX_ATTEMPTS": "4"}
    output = _serve_and_read_log(command, tmp_path, port, variables)
    lines = [line for line in output.splitlines() if LINE in line]
    assert len(lines) == 1, output[-4000:]
    # through ADK's own logging set-up (its format: time - LEVEL - file:line - message)
    assert " - INFO - " in lines[0], lines[0]
    assert "max_attempts=4" in lines[0] and "stall_timeout=3.0" in lines[0], lines[0]
    # the variables were applied: no line may call them ignored
    assert "ignored" not in output, output[-4000:]
