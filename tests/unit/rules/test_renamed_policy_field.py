"""A renamed policy field keeps working for one release: ``restart_when_handle_dead`` is now
``fresh_start_when_handle_dead``.

Every path a field name travels is tried with the old name: the constructor's keyword,
``replace``, the attribute, the ``ADK_LIVE_RESUME_<FIELD>`` variable, the
``ADK_LIVE_RESUME_POLICY_JSON`` and ``--policy-json`` keys, the launcher (in this process)
and its hand-off to child processes. Each use of the old name sets the new field and warns
with a ``DeprecationWarning`` that names the new one; where both names are given, the new
one wins; the new name alone never warns.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import adk_live_resume
from adk_live_resume import ResumePolicy
from adk_live_resume.launch import config, launcher

OLD_VARIABLE = "ADK_LIVE_RESUME_RESTART_WHEN_HANDLE_DEAD"
NEW_VARIABLE = "ADK_LIVE_RESUME_FRESH_START_WHEN_HANDLE_DEAD"
OFF = ResumePolicy(fresh_start_when_handle_dead=False)


@contextmanager
def _no_deprecation() -> Iterator[None]:
    """Fail if the block warns with a DeprecationWarning."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    assert [w for w in caught if issubclass(w.category, DeprecationWarning)] == []


def test_the_new_name_alone_never_warns() -> None:
    with _no_deprecation():
        policy = ResumePolicy(fresh_start_when_handle_dead=False).replace(max_attempts=3)
        assert policy == OFF.replace(max_attempts=3)
        assert config.resolve_policy({NEW_VARIABLE: "0"}) == OFF
        assert (
            config.resolve_policy({}, policy_json='{"fresh_start_when_handle_dead": false}') == OFF
        )
        assert ResumePolicy().fresh_start_when_handle_dead


def test_the_old_keyword_sets_the_new_field_and_warns() -> None:
    with pytest.warns(DeprecationWarning, match="use fresh_start_when_handle_dead"):
        policy = ResumePolicy(restart_when_handle_dead=False)
    assert policy == OFF and not policy.fresh_start_when_handle_dead
    with pytest.warns(DeprecationWarning, match="use fresh_start_when_handle_dead"):
        assert ResumePolicy().replace(restart_when_handle_dead=False) == OFF


def test_reading_the_old_attribute_returns_the_new_field_and_warns() -> None:
    with pytest.warns(DeprecationWarning, match="use fresh_start_when_handle_dead"):
        assert getattr(OFF, "restart_when_handle_dead") is False  # noqa: B009 (mypy)
    with pytest.warns(DeprecationWarning, match="use fresh_start_when_handle_dead"):
        assert getattr(ResumePolicy(), "restart_when_handle_dead") is True  # noqa: B009


def test_replace_does_not_carry_the_old_name_over_a_change_of_the_new_one() -> None:
    with _no_deprecation():
        assert OFF.replace(max_attempts=3).fresh_start_when_handle_dead is False
        assert OFF.replace(fresh_start_when_handle_dead=True).fresh_start_when_handle_dead


def test_the_old_variable_sets_the_new_field_and_warns_naming_the_new_variable() -> None:
    with pytest.warns(DeprecationWarning, match=f"{OLD_VARIABLE} .*use {NEW_VARIABLE}"):
        assert config.resolve_policy({OLD_VARIABLE: "off"}) == OFF
    with pytest.warns(DeprecationWarning):
        both = config.resolve_policy({OLD_VARIABLE: "off", NEW_VARIABLE: "on"})
    assert both.fresh_start_when_handle_dead, "the new variable wins"


def test_the_old_variable_is_known_not_reported_as_a_misspelling() -> None:
    assert config.unknown_variables({OLD_VARIABLE: "0"}) == []


@pytest.mark.parametrize("where", ["variable", "flag"])
def test_the_old_json_key_sets_the_new_field_and_warns(where: str) -> None:
    old = '{"restart_when_handle_dead": false}'
    both = '{"restart_when_handle_dead": false, "fresh_start_when_handle_dead": true}'

    def resolve(text: str) -> ResumePolicy:
        if where == "variable":
            return config.resolve_policy({config.POLICY_JSON_ENV: text})
        return config.resolve_policy({}, policy_json=text)

    with pytest.warns(DeprecationWarning, match="'restart_when_handle_dead'.*use 'fresh_start"):
        assert resolve(old) == OFF
    with pytest.warns(DeprecationWarning):
        assert resolve(both).fresh_start_when_handle_dead, "the new key wins"


def test_the_launcher_takes_the_old_name_and_hands_the_new_one_down(
    tmp_path: Path, launcher_sandbox: None, capsys: pytest.CaptureFixture[str]
) -> None:
    sys.path.insert(0, str(tmp_path))  # launcher_sandbox restores sys.path
    (tmp_path / "renamed_field_mod.py").write_text(
        "import adk_live_resume\n"
        "print(adk_live_resume.installed_policy().fresh_start_when_handle_dead)\n"
    )
    argv = ["--policy-json", '{"restart_when_handle_dead": false}', "-m", "renamed_field_mod"]
    with pytest.warns(DeprecationWarning, match="use 'fresh_start_when_handle_dead'"):
        assert launcher.main(argv) == 0
    assert capsys.readouterr().out == "False\n"
    adk_live_resume.uninstall()
    env: dict[str, str] = {}
    launcher.bootstrap_environment(env, OFF, strict=True)
    handed_down = env[launcher.BOOTSTRAP_POLICY_ENV]
    assert "restart_when_handle_dead" not in handed_down
    with _no_deprecation():
        assert launcher.resolve_policy({}, policy_json=handed_down) == OFF


def test_install_from_the_environment_takes_the_old_variable() -> None:
    with pytest.warns(DeprecationWarning, match=f"use {NEW_VARIABLE}"):
        launcher.install_from_environment({OLD_VARIABLE: "false"})
    try:
        assert adk_live_resume.installed_policy() == OFF
    finally:
        adk_live_resume.uninstall()
