"""``python -m adk_live_resume.testing serve``: a fake kept running for a person.

The command runs as a real subprocess; the ``export`` lines it prints are applied, and a bare
``genai.Client()`` built from them (REST) reaches the fake; SIGTERM stops it with exit 0.
"""

from __future__ import annotations

import concurrent.futures
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from google import genai

from adk_live_resume.testing.children import reap, spawn
from adk_live_resume.testing.serve import export_lines

pytestmark = [pytest.mark.timeout(90)]

ROOT = Path(__file__).resolve().parents[2]


def test_export_lines_quote_values_for_a_shell() -> None:
    assert export_lines({"A": "x y", "B": "plain"}) == ["export A='x y'", "export B=plain"]


def _read_until_serving(proc: subprocess.Popen[str]) -> list[str]:
    assert proc.stdout is not None
    lines: list[str] = []
    for line in proc.stdout:
        lines.append(line.rstrip("\n"))
        if line.startswith("# serving"):
            return lines
    raise AssertionError(f"serve exited before serving: {lines}")


@pytest.mark.parametrize("vertex", [False, True], ids=["gemini", "vertex"])
def test_serve_prints_exports_that_reach_it_and_stops_on_sigterm(
    vertex: bool, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    command = [sys.executable, "-m", "adk_live_resume.testing", "serve"]
    if vertex:
        command.append("--vertex")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = spawn(command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, text=True)
    try:
        with concurrent.futures.ThreadPoolExecutor(1) as reader:
            lines = reader.submit(_read_until_serving, proc).result(timeout=60)
        exports = [line for line in lines if not line.startswith("#")]
        assert exports and all(line.startswith("export ") for line in exports)
        for line in exports:
            name, _, value = line.removeprefix("export ").partition("=")
            monkeypatch.setenv(name, shlex.split(value)[0])
        for name in ("GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION", "GEMINI_API_KEY"):
            monkeypatch.delenv(name, raising=False)
        client = genai.Client()
        assert client.vertexai is vertex
        answer = client.models.generate_content(model="m", contents="by hand")
        assert answer.text == "echo: by hand"
        proc.send_signal(signal.SIGTERM)
        rest, _ = proc.communicate(timeout=30)
        assert proc.returncode == 0
        assert "0 live connections and 1 REST requests" in rest
    finally:
        reap(proc, signal.SIGKILL)


def test_serve_refuses_a_bad_port_with_a_clear_message() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "adk_live_resume.testing", "serve", "--port", "70000"],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "--port must be 0 (any free port) or 1-65535" in result.stderr
