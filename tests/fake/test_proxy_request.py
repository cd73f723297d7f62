"""The fault proxy's request target: a path only, under the one upstream fixed at start (pure)."""

from __future__ import annotations

import pytest

from adk_live_resume.fault_proxy.proxy_request import Upstream, request_target

LIVE_PATH = "/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent"

#: Request targets that would name another host if appended to the upstream's address, or
#: that are not a path at all.
ATTACKS = [
    ":x@attacker.example/ws/x",  # the configured host:port becomes userinfo
    "@attacker.example/ws/x",
    ".attacker.example/ws/x",  # a subdomain of the attacker's domain
    "wss://attacker.example/ws/x",  # absolute form
    "https://attacker.example/ws/x",
    "//attacker.example/ws/x",  # network-path reference
    "///attacker.example/ws/x",
    "ws/x",
    "",
    "*",
    "/ws/x#fragment",
    "/ws\\x",
    "/ws/x y",
    "/ws/\tx",
    "/ws/\u00e9",
    "/ws/%zz",
    "/ws/x?key=a b",
    "/ws/x?q=#",
]


@pytest.mark.parametrize("target", ATTACKS)
def test_a_target_that_is_not_a_path_is_refused_saying_what_it_must_be(target: str) -> None:
    with pytest.raises(ValueError, match="request target must be a path such as /ws/"):
        request_target(target)
    with pytest.raises(ValueError, match="request target must be"):
        Upstream.from_url("https://generativelanguage.googleapis.com").uri(target)


@pytest.mark.parametrize(
    "target",
    [
        LIVE_PATH + "?key=AIzaFAKE-_key",
        LIVE_PATH,
        "/ws/google.cloud.aiplatform.v1beta1.LlmBidiService/BidiGenerateContent",
        "/ws/x?key=real%2Fkey&alt=1",
        "/ws/@not-a-host/:colon;semi=1,(x)~!*'$+",
        "/",
    ],
)
def test_a_path_goes_under_the_configured_host(target: str) -> None:
    upstream = Upstream.from_url("https://generativelanguage.googleapis.com")
    assert request_target(target) == target
    assert upstream.uri(target) == "wss://generativelanguage.googleapis.com" + target


def test_the_upstream_s_base_path_and_port_stay_and_its_scheme_becomes_a_websocket_one() -> None:
    upstream = Upstream.from_url("http://127.0.0.1:8123/base/")
    assert upstream.url == "ws://127.0.0.1:8123/base"
    assert upstream.uri("/ws/x?alt=1") == "ws://127.0.0.1:8123/base/ws/x?alt=1"


@pytest.mark.parametrize(
    "url",
    [
        "generativelanguage.googleapis.com",
        "ftp://host",
        "https://",
        "https://h/?q=1",
        "https://h/#f",
    ],
)
def test_an_upstream_that_is_not_a_plain_url_is_refused(url: str) -> None:
    with pytest.raises(ValueError, match="upstream must be an https:// or wss:// URL"):
        Upstream.from_url(url)


def test_the_refusal_never_quotes_the_target() -> None:
    with pytest.raises(ValueError) as refused:
        request_target("https://attacker.example/ws?key=AIzaSECRET")
    assert "attacker" not in str(refused.value) and "AIza" not in str(refused.value)
