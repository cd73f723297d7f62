"""install() / uninstall() / is_installed(): idempotent, thread-safe, originals restored."""

from __future__ import annotations

import threading

import pytest
from google.adk.agents import LlmAgent
from google.adk.flows.llm_flows.base_llm_flow import BaseLlmFlow
from google.adk.models.llm_response import LlmResponse
from google.genai import errors as genai_errors

import adk_live_resume
from adk_live_resume import (
    InstallConflictError,
    ResumePolicy,
    UnsupportedAdkVersionError,
    adk_compat,
)
from adk_live_resume.testing import FakeLiveServer
from adk_live_resume.testing.driver import LiveDriver

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


def test_a_second_install_with_a_different_policy_says_so() -> None:
    adk_live_resume.install(ResumePolicy(max_attempts=3))
    with pytest.raises(InstallConflictError, match=r"different policy.*uninstall"):
        adk_live_resume.install(ResumePolicy(max_attempts=4))
    adk_live_resume.install()  # None means "no opinion": fine
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


def test_strict_version_guard_names_installed_and_supported_versions() -> None:
    with pytest.raises(UnsupportedAdkVersionError) as caught:
        adk_compat.check_supported_version("1.26.0")
    message = str(caught.value)
    assert "1.26.0" in message and ">=1.27.0,<2.14" in message and "strict=False" in message
    with pytest.raises(UnsupportedAdkVersionError):
        adk_compat.check_supported_version("2.14.0")
    adk_compat.check_supported_version("1.27.0")
    adk_compat.check_supported_version(adk_compat.adk_version())


def test_strict_false_installs_outside_the_range(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(adk_compat, "adk_version", lambda: "9.9.9")
    with pytest.raises(UnsupportedAdkVersionError, match=r"9\.9\.9"):
        adk_live_resume.install()
    assert not adk_live_resume.is_installed()
    adk_live_resume.install(strict=False)
    assert adk_live_resume.is_installed()


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
                assert isinstance(live.error, genai_errors.APIError), live.error
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
