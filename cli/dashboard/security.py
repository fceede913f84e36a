"""What keeps the dashboard's actions in the hands of the person at its page.

- **Sessions and anti-CSRF tokens.** The page's first load sets a random session cookie
  (HttpOnly, SameSite=Strict); the page carries the token for that session (an HMAC of it under a
  key that lives only in this process) in a ``<meta>`` tag, and sends it back in the
  ``X-CSRF-Token`` header of every state-changing request. Another site can neither read the
  token nor set the header without a CORS preflight, which the server never grants.
- **Same origin only.** A state-changing request whose ``Origin`` (or, without one, ``Referer``)
  is another origin than the dashboard's own, or whose ``Sec-Fetch-Site`` says cross-site, is
  refused; so is one that is not ``application/json`` (an HTML form cannot send that).
- **Host check.** Bound to a loopback address, the server answers only requests addressed to a
  loopback name (127.0.0.1, localhost, [::1]): a rebinding DNS name pointing at 127.0.0.1 cannot
  make a browser read it.
- **Headers.** A content security policy allowing only the dashboard's own scripts, styles and
  connections, no framing, no referrer, no sniffing.

Pure apart from the random key: decisions take the request's headers as plain values.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

SESSION_COOKIE = "ocm_rollout_session"
TOKEN_HEADER = "X-CSRF-Token"
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})
SECURITY_HEADERS: dict[str, str] = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}


class Refused(Exception):
    """A request refused (403 unless ``status`` says otherwise), with the reason shown."""

    def __init__(self, message: str, status: int = 403) -> None:
        super().__init__(message)
        self.status = status


def is_loopback(address: str) -> bool:
    host = address.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _host_name(host: str) -> str:
    """The name part of a Host header value (``[::1]:3100`` -> ``[::1]``, ``a:1`` -> ``a``)."""
    if host.startswith("["):
        return host[: host.find("]") + 1] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


@dataclass
class Guard:
    """The per-process secret and the checks; ``loopback_only``: the server listens on loopback."""

    loopback_only: bool
    key: bytes = field(default_factory=lambda: secrets.token_bytes(32))

    @staticmethod
    def new_session() -> str:
        return secrets.token_urlsafe(24)

    def token(self, session: str) -> str:
        return hmac.new(self.key, session.encode(), hashlib.sha256).hexdigest()

    def check_host(self, host: str) -> None:
        """Refuse a request addressed to a name that is not loopback while bound to loopback."""
        if not self.loopback_only:
            return
        name = _host_name(host.strip().lower())
        if name not in LOOPBACK_NAMES and not is_loopback(name):
            raise Refused(f"host {host!r} is not a loopback name: open the dashboard at http://127.0.0.1", 421)

    def check_write(self, *, method: str, scheme: str, host: str, headers: Mapping[str, str], cookies: Mapping[str, str]) -> None:
        """Refuse a state-changing request that is cross-origin, not JSON, or has no valid token
        for its session."""
        own = f"{scheme}://{host}".lower()
        origin = headers.get("Origin")
        if origin is not None:
            if origin.lower() != own:
                raise Refused(f"cross-origin request refused: Origin {origin} is not {own}")
        else:
            referer = headers.get("Referer")
            if referer:
                parts = urlsplit(referer)
                if f"{parts.scheme}://{parts.netloc}".lower() != own:
                    raise Refused("cross-origin request refused: the Referer is another origin")
        site = headers.get("Sec-Fetch-Site")
        if site is not None and site not in ("same-origin", "none"):
            raise Refused(f"cross-origin request refused: Sec-Fetch-Site is {site}")
        content_type = headers.get("Content-Type", "").split(";")[0].strip().lower()
        if method != "GET" and content_type != "application/json":
            raise Refused("state-changing requests must be application/json", 415)
        session = cookies.get(SESSION_COOKIE, "")
        sent = headers.get(TOKEN_HEADER, "")
        if not session or not sent or not hmac.compare_digest(sent, self.token(session)):
            raise Refused("missing or invalid anti-CSRF token: reload the dashboard page")
