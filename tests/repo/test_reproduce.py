"""scripts/reproduce_timeout.py: the stock-vs-patched reproduction, in-process and as a CLI.

What stock ADK does depends on the installed family: 1.27 never reconnects (the bug report:
APIError at the deadline); 2.x reconnects by itself on goAway and on a drop with a handle.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from google.adk.models.llm_response import LlmResponse

from adk_live_resume.testing import FakeLiveServer

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "reproduce_timeout.py"

#: The 1.27 family has no LlmResponse.go_away and never reconnects.
STOCK_NEVER_RECONNECTS = "go_away" not in LlmResponse.model_fields


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("reproduce_timeout", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["reproduce_timeout"] = module
    spec.loader.exec_module(module)
    return module


rt = _load()


def test_the_turn_aligned_plan_puts_the_tool_call_right_after_the_first_go_away() -> None:
    settings = rt.Settings(drop="goaway")
    plan = rt.plan_conversation(settings)
    assert len(plan) == 19 and settings.interval == 70
    assert [t.kind for t in plan].count("tool") == 1
    assert plan[0].kind == "first" and plan[-1].kind == "memory"
    tool = next(t for t in plan if t.kind == "tool")
    assert tool.at > 540 > plan[tool.index - 1].at  # goAway at 600 - 60
    assert plan[-1].accepts("you first said: hello, my name is Ada")
    assert not plan[-1].accepts("you said nothing yet") and not plan[-1].accepts(None)
    # no turn lands on the goAway or the deadline of the first connection
    assert all(abs(t.at - 540) > 10 and abs(t.at - 600) > 10 for t in plan)


def test_settings_are_validated() -> None:
    with pytest.raises(ValueError, match="--turns"):
        rt.Settings(turns=2)
    with pytest.raises(ValueError, match="--go-away-lead"):
        rt.Settings(connection_lifetime=60, go_away_lead=60)
    with pytest.raises(SystemExit) as exit_info:
        rt.main(["--gemini", "m", "--drop", "abrupt"])
    assert exit_info.value.code == 2


@pytest.mark.timeout(90)
async def test_go_away_run_patched_keeps_everything_stock_per_family() -> None:
    # 5 turns at 0, 220, 440, 660, 880 s; goAway at 540, deadline at 600 (0.003: 1.8 s real).
    settings = rt.Settings(time_scale=0.003, turns=5, duration=880, drop="goaway")
    comparison = await rt.reproduce(settings)
    stock, patched = comparison.stock, comparison.patched

    assert patched.kept_conversation, rt.format_table(comparison)
    assert patched.turns_answered == 5 and patched.turns_lost == 0
    assert patched.tool_call == "ok" and patched.memory_check == "ok"
    assert patched.connections == 2 and patched.resumed_connections == 1
    assert patched.go_aways == 1 and patched.deadline_closes == 0
    assert [e["reason"] for e in patched.reconnect_events] == ["go_away"]
    assert patched.reconnect_events[0]["state_restored"] is True
    assert patched.history_sends == 0 and patched.duplicate_history_sends == 0
    assert patched.ended == "closed normally"
    assert comparison.exit_code == 0

    if STOCK_NEVER_RECONNECTS:  # 1.27: the bug report
        assert stock.error_type == "APIError" and stock.error_code == 1011
        assert "Deadline expired" in stock.ended
        assert stock.connections == 1 and stock.deadline_closes == 1 and stock.go_aways == 1
        assert stock.turns_answered == 3 and stock.turns_lost == 2
        assert stock.tool_call == "lost" and stock.memory_check == "lost"
        assert stock.handles_issued and stock.ended_early
        assert comparison.stock_failed_as_reported
        assert "failed as in the bug report" in comparison.stock_verdict()
    else:  # 2.x: reconnects at once on goAway
        assert stock.connections == 2 and stock.resumed_connections == 1
        assert stock.deadline_closes == 0 and stock.error_type is None
        assert not comparison.stock_failed
        assert "survived this timeline" in comparison.stock_verdict()
        assert "the default scenario" in comparison.stock_verdict()
    table = rt.format_table(comparison)
    assert "stock ADK" in table and "adk_live_resume" in table and "exit status 0" in table


def test_the_default_scenario_is_the_real_service() -> None:
    settings = rt.Settings()
    assert settings.drop == "service" and settings.drop_turn == 6
    plan = rt.plan_conversation(settings)
    # the tool call is the turn being answered when the socket dies
    assert next(t for t in plan if t.kind == "tool").index == settings.drop_turn + 1
    # the conversation outlives the connections: goAway and deadlines happen too
    assert settings.duration > settings.connection_lifetime
    assert rt.build_parser().parse_args([]).drop == "service"


@pytest.mark.timeout(90)
async def test_the_default_scenario_fails_stock_on_every_family_and_patched_keeps_it() -> None:
    # 5 turns at 0, 220, 440, 660, 880 s: the socket dies while turn 3 is answered; later
    # connections reach goAway (540 s after they start) before the conversation ends.
    settings = rt.Settings(time_scale=0.003, turns=5, duration=880)
    assert settings.drop == "service"
    comparison = await rt.reproduce(settings)
    stock, patched = comparison.stock, comparison.patched
    assert patched.kept_conversation, rt.format_table(comparison)
    assert patched.turns_answered == 5 and patched.tool_call == "ok"
    assert patched.memory_check == "ok" and patched.duplicate_history_sends == 0
    assert [e["reason"] for e in patched.reconnect_events][:1] == ["drop"]
    assert patched.reconnect_events[0]["state_restored"] is True
    # 1.x never reconnects; 2.x erased its handle on resumable=false and cannot resume
    assert stock.error_code == 1006 and stock.connections == 1 and stock.turns_lost >= 2
    assert comparison.stock_failed_as_reported, rt.format_table(comparison)
    assert "as on the real service" in comparison.stock_verdict()
    assert comparison.exit_code == 0


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("drop", "code"), [("abrupt", 1006), ("1011", 1011)])
async def test_mid_conversation_drop(drop: str, code: int) -> None:
    # A long connection lifetime: only the scripted drop (after turn 2) happens.
    settings = rt.Settings(
        time_scale=0.004, connection_lifetime=6000, drop=drop, turns=4, duration=300
    )
    assert settings.drop_turn == 1
    comparison = await rt.reproduce(settings)
    stock, patched = comparison.stock, comparison.patched
    assert patched.kept_conversation, rt.format_table(comparison)
    assert patched.connections == 2 and patched.go_aways == 0
    assert [e["reason"] for e in patched.reconnect_events] == ["drop"]
    assert str(code) in patched.reconnect_events[0]["cause"]
    if STOCK_NEVER_RECONNECTS:
        assert stock.error_code == code and stock.connections == 1
        assert stock.turns_answered == 2 and stock.turns_lost == 2
        assert comparison.stock_failed_as_reported
    else:
        assert stock.connections == 2 and stock.resumed_connections == 1


@pytest.mark.timeout(60)
async def test_a_drop_while_the_model_answers_kills_stock_on_every_family() -> None:
    settings = rt.Settings(
        time_scale=0.004, connection_lifetime=6000, drop="midturn", turns=4, duration=300
    )
    comparison = await rt.reproduce(settings)
    stock, patched = comparison.stock, comparison.patched
    assert patched.kept_conversation, rt.format_table(comparison)
    assert patched.turns_answered == 4 and patched.connections == 2
    assert [e["reason"] for e in patched.reconnect_events] == ["drop"]
    # 1.27 never reconnects; 2.x erased its handle on resumable=false, so it cannot resume
    assert stock.error_code == 1006 and stock.connections == 1 and stock.turns_lost >= 2
    assert comparison.stock_failed_as_reported, rt.format_table(comparison)
    assert comparison.exit_code == 0


@pytest.mark.timeout(60)
async def test_spoken_turns_with_a_drop_patched() -> None:
    settings = rt.Settings(
        time_scale=0.004,
        connection_lifetime=6000,
        drop="abrupt",
        audio=True,
        turns=3,
        duration=100,
    )
    result = await rt.run_once(settings, patched=True)
    assert result.kept_conversation, result
    assert result.turns[0].answer == "echo: hello, my name is Ada"
    assert result.connections == 2 and result.tool_invocations == 1


@pytest.mark.timeout(60)
async def test_the_gemini_code_path_runs_against_the_fake_through_the_environment() -> None:
    # --gemini builds a plain (counting) Gemini from the environment: point it at the fake.
    async with FakeLiveServer() as server:
        with server.environment():
            settings = rt.Settings(gemini_model="gemini-live-fake", turns=3, duration=0.3)
            result = await rt.run_once(settings, patched=True)
        assert len(server.connections) == 1
    assert result.connections == 1 and result.history_sends == 0
    assert result.turns[0].ok and result.turns[0].answer.startswith("echo: Hi, my name is Ada")
    assert result.error_type is None


@pytest.mark.timeout(90)
async def test_the_gemini_path_through_the_fault_proxy_brings_the_go_away_in_seconds() -> None:
    # --gemini's default: a fault proxy in front of the endpoint the environment names (the
    # fake here), a goAway 1 s after each connection opened; the patched run moves on.
    async with FakeLiveServer() as server:
        with server.environment():
            settings = rt.Settings(
                gemini_model="gemini-live-fake", turns=4, duration=3.0, proxy_go_away=1.0
            )
            result = await rt.run_once(settings, patched=True)
            assert os.environ["GOOGLE_GEMINI_BASE_URL"] == server.base_url  # restored
        # (a socket opened ahead and never taken has no setup: it resumed nothing)
        taken = [c for c in server.connections[1:] if c.setup is not None]
        assert taken and all(c.resumed for c in taken), server.connections
    assert result.go_aways >= 1 and result.resumed_connections >= 1
    assert result.history_sends == 0
    # every turn answered (the fake echoes the natural-language memory check, so its "ok"
    # is the real model's business)
    assert result.turns[0].ok and all(turn.answer for turn in result.turns), result.turns
    assert result.error_type is None


def test_the_proxy_is_the_gemini_default_and_only_there() -> None:
    parser = rt.build_parser()
    proxied = rt.settings_from_args(parser.parse_args(["--gemini", "m"]))
    assert proxied.proxy_go_away == rt.DEFAULT_PROXY_GO_AWAY
    assert proxied.duration == rt.DEFAULT_PROXIED_DURATION
    plain = rt.settings_from_args(parser.parse_args(["--gemini", "m", "--no-proxy"]))
    assert plain.proxy_go_away is None and plain.duration == rt.DEFAULT_GEMINI_DURATION
    assert rt.settings_from_args(parser.parse_args([])).proxy_go_away is None
    with pytest.raises(ValueError, match="go with --gemini"):
        rt.settings_from_args(parser.parse_args(["--proxy-go-away", "5"]))
    with pytest.raises(ValueError, match="exclude each other"):
        rt.settings_from_args(
            parser.parse_args(["--gemini", "m", "--no-proxy", "--proxy-go-away", "5"])
        )


def _env_without_key() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("GOOGLE_API_KEY", "GEMINI_API_KEY")}
    return env


def test_gemini_without_a_key_stops_with_a_clear_message() -> None:
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--gemini", "gemini-live-2.5-flash-preview"],
        env=_env_without_key(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "GOOGLE_API_KEY" in proc.stderr and proc.stdout == ""


def test_help_documents_the_exit_status() -> None:
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--help"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0
    assert "Exit status" in proc.stdout and "--real-time" in proc.stdout


def test_json_output_of_a_short_run() -> None:
    args = [
        *("--json", "--quiet", "--time-scale", "0.004", "--lifetime", "6000"),
        *("--drop", "1011", "--turns", "4", "--duration", "300"),
    ]
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        env=_env_without_key(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads(proc.stdout)
    assert data["exit_code"] == 0 and data["patched_kept_conversation"] is True
    assert data["settings"]["backend"] == "fake" and data["settings"]["drop"] == "1011"
    patched, stock = data["patched"], data["stock"]
    assert patched["turns_answered"] == 4 and patched["turns_lost"] == 0
    assert patched["connections"] == 2 and patched["reconnects"] == 1
    assert len(patched["turns"]) == 4
    if STOCK_NEVER_RECONNECTS:
        assert stock["error_code"] == 1011 and stock["turns_lost"] == 2
        assert data["stock_failed_as_reported"] is True
    else:
        assert stock["connections"] == 2
