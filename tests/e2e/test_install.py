"""install() / uninstall() / is_installed(): idempotent, thread-safe, originals restored."""

from __future__ import annotations

import threading

import pytest
from google.adk.agents import LlmAgent
from google.adk.flows.llm_flows.base_llm_flow import BaseLlmFlow
from google.adk.models.llm_response import LlmResponse
from google.genai import errors as genai_errors
from websockets.exceptions import ConnectionClosedError

import adk_live_resume
from adk_live_resume import ResumePolicy, UnsupportedAdkVersionError
from adk_live_resume.compat import adk_compat, genai_compat
from adk_live_resume.launch import config
from adk_live_resume.launch import patch as patch_module
from adk_live_resume.testing import FakeLiveServer
from adk_live_resume.testing.driver import LiveDriver

#: Part of the core resumption tests every release of the matrix runs.
pytestmark = pytest.mark.core

ORIGINAL = BaseLlmFlow.__dict__["run_live"]


def test_install_is_idempotent_and_uninstall_restores_the_original() -> None:
    assert not adk_live_resume.is_installed()
    adk_live_resume.install()
    patched = BaseLlmFlow.__dict__["run_live"]
    assert patched is not ORIGINAL
    adk_live_resume.install()  # same (default) policy: nothing happens
    adk_live_resume.install(ResumePolicy())
    assert BaseLlmFlow.__dict__["run_live"] is patched
    assert adk_live_resume.installed_policy() == ResumePolicy()
    assert adk_live_resume.uninstall() is True
    assert BaseLlmFlow.__dict__["run_live"] is ORIGINAL
    assert adk_live_resume.uninstall() is False
    assert not adk_live_resume.is_installed()


def test_a_second_install_with_a_different_policy_keeps_the_first_and_warns(
    caplog: pytest.LogCaptureFixture,
) -> None:
    adk_live_resume.install(ResumePolicy(max_attempts=3))
    with caplog.at_level("WARNING", logger="adk_live_resume"):
        adk_live_resume.install(ResumePolicy(max_attempts=4))  # never a crash
    assert "already installed" in caplog.text and "first install wins" in caplog.text
    assert "max_attempts=3" in caplog.text and "max_attempts=4" in caplog.text
    caplog.clear()
    adk_live_resume.install()  # None means "no opinion": fine, and silent
    assert caplog.text == ""
    assert adk_live_resume.installed_policy() == ResumePolicy(max_attempts=3)


def test_uninstall_leaves_a_later_patch_alone(caplog: pytest.LogCaptureFixture) -> None:
    adk_live_resume.install()

    async def someone_elses(self: object, ctx: object):  # type: ignore[no-untyped-def]
        yield None

    BaseLlmFlow.run_live = someone_elses  # type: ignore[method-assign,assignment]
    try:
        assert adk_live_resume.uninstall()
        assert BaseLlmFlow.__dict__["run_live"] is someone_elses
        assert "replaced by someone else" in caplog.text
    finally:
        BaseLlmFlow.run_live = ORIGINAL  # type: ignore[method-assign]


def test_concurrent_installs_patch_once() -> None:
    errors: list[BaseException] = []

    def go() -> None:
        try:
            adk_live_resume.install()
        except BaseException as error:  # pragma: no cover - would fail the test
            errors.append(error)

    threads = [threading.Thread(target=go) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert adk_live_resume.uninstall()
    assert BaseLlmFlow.__dict__["run_live"] is ORIGINAL


def test_version_guard_refuses_only_releases_below_the_minimum() -> None:
    with pytest.raises(UnsupportedAdkVersionError) as caught:
        adk_compat.check_supported_version("1.26.0")
    message = str(caught.value)
    assert "1.26.0" in message and ">= 1.27.0" in message and "strict=False" in message
    assert adk_compat.check_supported_version("1.27.0") == "tested"
    assert adk_compat.check_supported_version("2.13.9") == "tested"
    assert adk_compat.check_supported_version("2.14.0") == "newer"
    assert adk_compat.check_supported_version("3.0.0rc1") == "newer"


@pytest.fixture
def warnings_not_yet_given(monkeypatch: pytest.MonkeyPatch) -> None:
    """Forget which once-per-process warnings were given: another test may have given them."""
    monkeypatch.setattr(patch_module, "_warned_untested", set())


@pytest.mark.usefixtures("warnings_not_yet_given")
def test_a_newer_untested_release_installs_with_one_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(adk_compat, "adk_version", lambda: "9.9.9")
    with caplog.at_level("WARNING", logger="adk_live_resume"):
        adk_live_resume.install()
        assert adk_live_resume.is_installed()
        adk_live_resume.uninstall()
        adk_live_resume.install()  # warned once per process, not once per install
    warnings = [r for r in caplog.records if "newer than the releases" in r.getMessage()]
    assert len(warnings) == 1
    assert "9.9.9" in warnings[0].getMessage() and "feature detection" in warnings[0].getMessage()
    assert adk_live_resume.is_installed()


@pytest.mark.usefixtures("warnings_not_yet_given")
def test_a_google_genai_newer_than_tested_installs_with_one_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    assert not genai_compat.genai_is_newer_than_tested(genai_compat.TESTED_GENAI_NEWEST)
    assert not genai_compat.genai_is_newer_than_tested("1.56.0")
    major, minor, _ = adk_compat.parse_version(genai_compat.TESTED_GENAI_NEWEST)
    assert not genai_compat.genai_is_newer_than_tested(f"{major}.{minor}.9")  # a patch release
    assert genai_compat.genai_is_newer_than_tested(f"{major}.{minor + 1}.0")
    assert genai_compat.genai_is_newer_than_tested(f"{major + 1}.0.0")
    with caplog.at_level("WARNING", logger="adk_live_resume"):
        adk_live_resume.install()  # the installed google-genai is a tested one
    assert not [r for r in caplog.records if "google-genai" in r.getMessage()]
    adk_live_resume.uninstall()
    monkeypatch.setattr(genai_compat, "genai_version", lambda: "9.8.7")
    with caplog.at_level("WARNING", logger="adk_live_resume"):
        adk_live_resume.install()
        adk_live_resume.uninstall()
        adk_live_resume.install()  # warned once per process, not once per install
    warnings = [r for r in caplog.records if "google-genai" in r.getMessage()]
    assert len(warnings) == 1
    text = warnings[0].getMessage()
    assert "9.8.7" in text and genai_compat.TESTED_GENAI_NEWEST in text
    assert adk_live_resume.is_installed()


def test_an_older_release_is_refused_unless_not_strict(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(adk_compat, "adk_version", lambda: "1.20.0")
    with pytest.raises(UnsupportedAdkVersionError, match=r"1\.20\.0"):
        adk_live_resume.install()
    assert not adk_live_resume.is_installed()
    adk_live_resume.install(strict=False)
    assert adk_live_resume.is_installed()


def test_a_missing_feature_is_refused_with_its_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(adk_compat, "adk_version", lambda: "9.9.9")
    monkeypatch.setattr(adk_compat, "_live_flow_module", lambda: None)
    for name in ("_send_to_model", "_receive_from_model"):
        monkeypatch.delattr(BaseLlmFlow, name, raising=False)
    monkeypatch.setattr(adk_compat, "surface", adk_compat._detect)  # detect afresh, uncached
    with pytest.raises(UnsupportedAdkVersionError, match="_send_to_model/_receive_from_model"):
        adk_live_resume.install()
    assert not adk_live_resume.is_installed()
    assert BaseLlmFlow.__dict__["run_live"] is ORIGINAL


@pytest.mark.parametrize("bad", [5, "max_attempts=5", {"max_attempts": 5}])
def test_install_refuses_what_is_not_a_policy_at_once(bad: object) -> None:
    with pytest.raises(TypeError, match="install\\(\\) takes a ResumePolicy"):
        adk_live_resume.install(bad)  # type: ignore[arg-type]
    assert not adk_live_resume.is_installed()


def test_install_logs_one_info_line_with_release_and_policy(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level("INFO", logger="adk_live_resume"):
        adk_live_resume.install(ResumePolicy(max_attempts=4))
        adk_live_resume.install()
    lines = [r for r in caplog.records if "installed on google-adk" in r.getMessage()]
    assert len(lines) == 1 and lines[0].levelname == "INFO"
    assert adk_compat.adk_version() in lines[0].getMessage()
    assert "max_attempts=4" in lines[0].getMessage()


def test_install_without_a_policy_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ADK_LIVE_RESUME_POLICY_JSON", '{"max_attempts": 2, "go_away_margin": 7}')
    monkeypatch.setenv("ADK_LIVE_RESUME_MAX_ATTEMPTS", "5")  # <FIELD> wins over POLICY_JSON
    adk_live_resume.install()
    assert adk_live_resume.installed_policy() == ResumePolicy(max_attempts=5, go_away_margin=7)


def test_a_policy_in_code_wins_over_the_environment_and_says_so(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("ADK_LIVE_RESUME_MAX_ATTEMPTS", "5")
    with caplog.at_level("WARNING", logger="adk_live_resume"):
        adk_live_resume.install(ResumePolicy(max_attempts=3))
    assert adk_live_resume.installed_policy() == ResumePolicy(max_attempts=3)
    assert "ADK_LIVE_RESUME_MAX_ATTEMPTS is ignored" in caplog.text


def test_a_misspelt_variable_is_warned_about_with_the_right_name(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("ADK_LIVE_RESUME_MAX_ATEMPTS", "5")
    monkeypatch.setattr(config, "_reported", set())
    with caplog.at_level("WARNING", logger="adk_live_resume"):
        adk_live_resume.install()
        adk_live_resume.uninstall()
        adk_live_resume.install()
    warnings = [
        r.getMessage() for r in caplog.records if "ADK_LIVE_RESUME_MAX_ATEMPTS" in r.getMessage()
    ]
    assert warnings == [
        "unknown environment variable ADK_LIVE_RESUME_MAX_ATEMPTS is ignored; "
        "did you mean ADK_LIVE_RESUME_MAX_ATTEMPTS?"
    ]
    assert adk_live_resume.installed_policy() == ResumePolicy()


def test_the_test_suites_own_variables_are_not_warned_about(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("ADK_LIVE_RESUME_CHAOS_RUNS", "5")
    monkeypatch.setenv("ADK_LIVE_RESUME_VOICE_CHAOS_SEED", "116")
    monkeypatch.setattr(config, "_reported", set())
    with caplog.at_level("WARNING", logger="adk_live_resume"):
        adk_live_resume.install()
    assert [r.getMessage() for r in caplog.records if "CHAOS" in r.getMessage()] == []


def test_a_bad_environment_value_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ADK_LIVE_RESUME_MAX_ATTEMPTS", "five")
    with pytest.raises(
        ValueError, match="ADK_LIVE_RESUME_MAX_ATTEMPTS: max_attempts must be an integer"
    ):
        adk_live_resume.install()
    assert not adk_live_resume.is_installed()


@pytest.mark.e2e
@pytest.mark.timeout(60)
async def test_install_uninstall_install_switches_behaviour() -> None:
    async def resumes_after_a_drop(server: FakeLiveServer) -> bool:
        agent = LlmAgent(name="assistant", model=server.gemini())
        async with await LiveDriver.start(agent) as live:
            assert await live.say("one") == "echo: one"
            before = len(server.connections)
            await server.close_open(1011)
            try:
                await server.wait_for(lambda: len(server.connections) > before or live.ended, 10)
                assert await live.say("two") == "echo: two"
            except AssertionError:
                # stock ADK's error: google-genai wraps the close in APIError (websockets'
                # own ConnectionClosedError from google-genai < 1.6x, the oldest ADK allows)
                assert isinstance(live.error, genai_errors.APIError | ConnectionClosedError), (
                    live.error
                )
                return False
            assert await live.close() is None
            return True

    async with FakeLiveServer() as server:
        adk_live_resume.install()
        assert await resumes_after_a_drop(server)
        adk_live_resume.uninstall()
        assert BaseLlmFlow.__dict__["run_live"] is ORIGINAL
        if "go_away" not in LlmResponse.model_fields:  # stock 1.27 family: no reconnect at all
            assert not await resumes_after_a_drop(server)
        adk_live_resume.install()
        assert await resumes_after_a_drop(server)
