"""Optional policy fields (``X | None``) through every way a policy is given.

A throwaway subclass (:mod:`tests.optional_policy`) adds ``probe_timeout: float | None = 3.0``
and ``probe_limit: int | None = None``; the same machinery that serves ``ResumePolicy``'s own
fields carries them through the environment, ``--policy-json`` and the launcher's JSON
hand-off to child processes (end to end, in a real child Python), the launcher's flags and
the generated docs table. ``none`` (any case) sets such a field to ``None`` in a variable or
a flag, ``null`` in JSON; fields that are not optional still refuse it.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adk_live_resume import ResumePolicy
from adk_live_resume.launch import config, launcher
from adk_live_resume.launch.config import ConfigError
from adk_live_resume.testing.children import reap, spawn
from tests.optional_policy import ProbePolicy, probe_policy_in_use

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def probe() -> Iterator[None]:
    with probe_policy_in_use():
        yield


# ---- the environment -------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["none", "None", " NONE "])
def test_none_in_a_variable_sets_an_optional_field_to_none(probe: None, text: str) -> None:
    policy = config.resolve_policy({"ADK_LIVE_RESUME_PROBE_TIMEOUT": text})
    assert isinstance(policy, ProbePolicy) and policy.probe_timeout is None


def test_a_value_in_a_variable_sets_an_optional_field(probe: None) -> None:
    policy = config.resolve_policy(
        {"ADK_LIVE_RESUME_PROBE_TIMEOUT": "2.5", "ADK_LIVE_RESUME_PROBE_LIMIT": "4"}
    )
    assert (policy.probe_timeout, policy.probe_limit) == (2.5, 4)  # type: ignore[attr-defined]
    empty = config.resolve_policy({"ADK_LIVE_RESUME_PROBE_TIMEOUT": ""})
    assert empty.probe_timeout == 3.0  # type: ignore[attr-defined]  # empty: not set


def test_a_bad_value_for_an_optional_field_says_how_to_write_none(probe: None) -> None:
    with pytest.raises(ConfigError) as error:
        config.resolve_policy({"ADK_LIVE_RESUME_PROBE_LIMIT": "lots"})
    assert str(error.value) == (
        "ADK_LIVE_RESUME_PROBE_LIMIT: probe_limit must be an integer or none, not 'lots' "
        "(write none to set it to None: ADK_LIVE_RESUME_PROBE_LIMIT=none)"
    )


def test_a_field_that_is_not_optional_still_refuses_none(probe: None) -> None:
    with pytest.raises(ConfigError, match="max_attempts must be an integer, not 'none'"):
        config.resolve_policy({"ADK_LIVE_RESUME_MAX_ATTEMPTS": "none"})
    with pytest.raises(ConfigError, match="max_attempts must be an integer, not None"):
        config.resolve_policy({}, policy_json='{"max_attempts": null}')
    with pytest.raises(ConfigError, match="go_away_margin must be a number, not 'none'"):
        config.resolve_policy({}, flags={"go_away_margin": "none"})


def test_the_optional_fields_variables_are_known(probe: None) -> None:
    assert not config.unknown_variables({"ADK_LIVE_RESUME_PROBE_TIMEOUT": "none"})


# ---- JSON: --policy-json, ADK_LIVE_RESUME_POLICY_JSON and the hand-off -----------------------


def test_null_in_json_sets_an_optional_field_to_none(probe: None) -> None:
    text = '{"probe_timeout": null, "probe_limit": 3}'
    for policy in (
        config.resolve_policy({}, policy_json=text),
        config.resolve_policy({config.POLICY_JSON_ENV: text}),
    ):
        assert (policy.probe_timeout, policy.probe_limit) == (None, 3)  # type: ignore[attr-defined]


def test_the_hand_off_carries_none_and_values(probe: None) -> None:
    for policy in (ProbePolicy(probe_timeout=None, probe_limit=2), ProbePolicy(probe_timeout=1)):
        env: dict[str, str] = {}
        launcher.bootstrap_environment(env, policy, strict=True)
        handed = json.loads(env[config.BOOTSTRAP_POLICY_ENV])
        assert handed["probe_timeout"] == policy.probe_timeout
        assert config.policy_from_json(env[config.BOOTSTRAP_POLICY_ENV], "hand-off") == policy


def test_a_bad_json_value_for_an_optional_field_says_null(probe: None) -> None:
    with pytest.raises(ConfigError, match=r'write none to set it to None: \{"probe_limit": null\}'):
        config.resolve_policy({}, policy_json='{"probe_limit": "lots"}')


@given(
    timeout=st.none() | st.floats(min_value=0, max_value=1e6, allow_nan=False),
    limit=st.none() | st.integers(min_value=0, max_value=10**6),
)
def test_every_optional_value_survives_json_and_the_environment(
    timeout: float | None, limit: int | None
) -> None:
    with probe_policy_in_use():
        policy = ProbePolicy(probe_timeout=timeout, probe_limit=limit)
        text = config.policy_to_json(policy)
        assert config.policy_from_json(text, "test") == policy
        env = {
            "ADK_LIVE_RESUME_PROBE_TIMEOUT": "none" if timeout is None else repr(timeout),
            "ADK_LIVE_RESUME_PROBE_LIMIT": "none" if limit is None else str(limit),
        }
        assert config.resolve_policy(env) == policy


# ---- the launcher's flags ---------------------------------------------------------------------


def test_flags_set_optional_fields_to_none_or_a_value(probe: None) -> None:
    parser = launcher.build_parser()
    options = parser.parse_args(["--probe-timeout", "none", "--probe-limit=7"])
    flags = {name: getattr(options, name) for name, _ in launcher._FLAGS}
    env = {"ADK_LIVE_RESUME_PROBE_TIMEOUT": "9"}  # a flag wins over the variable
    policy = config.resolve_policy(env, flags=flags)
    assert (policy.probe_timeout, policy.probe_limit) == (None, 7)  # type: ignore[attr-defined]
    untouched = parser.parse_args([])
    flags = {name: getattr(untouched, name) for name, _ in launcher._FLAGS}
    assert config.resolve_policy(env, flags=flags).probe_timeout == 9.0  # type: ignore[attr-defined]


def test_optional_flags_show_their_default_and_how_to_write_none(probe: None) -> None:
    text = " ".join(launcher.build_parser().format_help().split())
    assert "--probe-timeout SECONDS|none" in text
    assert "seconds a probe may take (default 3 s; none sets it to None)" in text
    assert "probes allowed per run (default none; none sets it to None)" in text
    assert "--max-attempts N connection attempts per outage (default 8)" in text


def test_a_bad_flag_value_is_a_usage_error_that_says_how_to_write_none(
    probe: None, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        launcher.main(["--probe-limit", "lots", "python"])
    assert exit_info.value.code == 2
    err = " ".join(capsys.readouterr().err.split())
    assert (
        "argument --probe-limit: probe_limit must be an integer or none, not 'lots' "
        "(write none to set it to None: --probe-limit none)" in err
    )


def test_optional_flags_are_launcher_options(probe: None) -> None:
    assert launcher.split_argv(["--probe-timeout", "none", "adk", "web"])[0] == [
        "--probe-timeout",
        "none",
    ]
    with pytest.raises(launcher.LauncherError, match="--probe-limit comes after the command"):
        launcher.split_argv(["adk", "web", "--probe-limit", "3"])


# ---- the docs table ---------------------------------------------------------------------------


def _docs_hooks() -> ModuleType:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        return importlib.import_module("docs_hooks")
    finally:
        sys.path.remove(str(ROOT / "scripts"))


def _rendered_rows(table: str) -> dict[str, list[str]]:
    """The table as the site renders it (Python-Markdown's tables): cells by field name."""
    markdown = pytest.importorskip(
        "markdown", reason="renders with the docs extra's Markdown (pip install -e '.[docs]')"
    )

    html = markdown.markdown(table, extensions=["tables"])
    rows = {}
    for row in re.findall(r"<tr>(.*?)</tr>", html, flags=re.DOTALL)[1:]:
        cells = [c.strip() for c in re.findall(r"<td>(.*?)</td>", row, flags=re.DOTALL)]
        rows[re.sub(r"</?code>", "", cells[0])] = cells
    return rows


def test_the_docs_table_shows_optional_fields() -> None:
    rows = _rendered_rows(_docs_hooks().policy_fields_table(ProbePolicy))
    timeout = rows["probe_timeout"]
    assert timeout[1:4] == [
        "<code>float | None</code>",
        "<code>3.0</code>",
        "<code>ADK_LIVE_RESUME_PROBE_TIMEOUT</code><br><code>none</code> sets it to "
        "<code>None</code>",
    ]
    assert timeout[4] == "Seconds a probe may take; <code>None</code>: no limit."
    assert "probe_timeout must be a finite number" in timeout[5]
    limit = rows["probe_limit"]
    assert limit[1:3] == ["<code>int | None</code>", "<code>None</code>"]
    assert "probe_limit must be an integer" in limit[5]
    assert "none" not in rows["max_attempts"][3]  # not optional: no such note
    assert len(rows) == len(dataclasses.fields(ProbePolicy)) == len(ResumePolicy().__dict__) + 2


# ---- a child process, end to end --------------------------------------------------------------

LAUNCH = (
    "import sys\n"
    "from tests.optional_policy import use_probe_policy\n"
    "use_probe_policy()\n"
    "from adk_live_resume.launch.launcher import main\n"
    "sys.exit(main())\n"
)

CHILD = textwrap.dedent(
    """
    import json, os, sys
    from tests.optional_policy import use_probe_policy

    use_probe_policy()
    print("adk loaded at start", "google.adk" in sys.modules)
    import google.adk  # the bootstrap installs the handed-down policy right here

    import adk_live_resume

    policy = adk_live_resume.installed_policy()
    handed = json.loads(os.environ["ADK_LIVE_RESUME_BOOTSTRAP_POLICY"])
    print("handed", handed["probe_timeout"], handed["probe_limit"])
    print("installed", type(policy).__name__, policy.probe_timeout, policy.probe_limit)
    """
)


@pytest.mark.timeout(150)
def test_a_child_python_gets_optional_fields_from_the_launcher(tmp_path: Path) -> None:
    (tmp_path / "child.py").write_text(CHILD)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ADK_LIVE_RESUME_")}
    env["PYTHONPATH"] = str(ROOT)  # the launcher keeps it, after its bootstrap directory
    env["ADK_LIVE_RESUME_PROBE_LIMIT"] = "5"
    flags = ["--probe-timeout", "NONE"]
    proc = spawn(
        [sys.executable, "-W", "ignore", "-c", LAUNCH, *flags, "python", "child.py"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        out, err = proc.communicate(timeout=120)
    finally:
        reap(proc, signal.SIGKILL)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{out}\n{err[-3000:]}"
    assert out.splitlines() == [
        "adk loaded at start False",
        "handed None 5",
        "installed ProbePolicy None 5",
    ]
