"""The dashboard's guard: sessions, anti-CSRF tokens, same-origin writes, loopback host names."""

from __future__ import annotations

import pytest

from ocm_rollout.cli.dashboard.security import SESSION_COOKIE, Guard, Refused

HOST = "127.0.0.1:3100"


def write(guard: Guard, session: str, headers: dict[str, str]) -> None:
    guard.check_write(method="POST", scheme="http", host=HOST, headers={"Content-Type": "application/json", **headers},
                      cookies={SESSION_COOKIE: session})


def test_a_same_origin_request_with_its_sessions_token_passes() -> None:
    guard = Guard(loopback_only=True)
    write(guard, "s1", {"Origin": f"http://{HOST}", "X-CSRF-Token": guard.token("s1"), "Sec-Fetch-Site": "same-origin"})


def test_a_cross_origin_request_is_refused_even_with_a_valid_token() -> None:
    guard = Guard(loopback_only=True)
    with pytest.raises(Refused, match="cross-origin"):
        write(guard, "s1", {"Origin": "http://evil.example", "X-CSRF-Token": guard.token("s1")})
    with pytest.raises(Refused, match="Sec-Fetch-Site is cross-site"):
        write(guard, "s1", {"Sec-Fetch-Site": "cross-site", "X-CSRF-Token": guard.token("s1")})
    with pytest.raises(Refused, match="Referer"):
        write(guard, "s1", {"Referer": "http://evil.example/page", "X-CSRF-Token": guard.token("s1")})


def test_a_missing_wrong_or_other_sessions_token_is_refused() -> None:
    guard = Guard(loopback_only=True)
    for headers in ({}, {"X-CSRF-Token": "0" * 64}, {"X-CSRF-Token": guard.token("other")}):
        with pytest.raises(Refused, match="anti-CSRF token"):
            write(guard, "s1", headers)


def test_tokens_differ_per_process_and_per_session() -> None:
    one, two = Guard(loopback_only=True), Guard(loopback_only=True)
    assert one.token("s") != two.token("s") and one.token("s") != one.token("t")


def test_a_form_post_is_refused() -> None:
    guard = Guard(loopback_only=True)
    with pytest.raises(Refused) as refused:
        guard.check_write(method="POST", scheme="http", host=HOST, headers={"Content-Type": "application/x-www-form-urlencoded",
                          "X-CSRF-Token": guard.token("s")}, cookies={SESSION_COOKIE: "s"})
    assert refused.value.status == 415


@pytest.mark.parametrize("host", ["127.0.0.1:3100", "localhost:3100", "[::1]:3100", "127.0.0.2", "LOCALHOST"])
def test_loopback_names_are_answered(host: str) -> None:
    Guard(loopback_only=True).check_host(host)


def test_a_rebinding_name_is_refused_on_loopback_and_allowed_elsewhere() -> None:
    with pytest.raises(Refused) as refused:
        Guard(loopback_only=True).check_host("attacker.example:3100")
    assert refused.value.status == 421
    Guard(loopback_only=False).check_host("dashboard.internal:3100")
