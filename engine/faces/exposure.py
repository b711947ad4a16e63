"""Who may reach a face: one loopback rule and one token rule for every face.

Owns: ``is_loopback`` (which addresses count as this machine only),
``exposed`` (where a face is reachable from beyond loopback), ``refusal`` /
``check`` (a face reachable beyond loopback needs its token setting, else it
refuses, naming the setting), ``reach`` (the words of a startup line), and
``token_matches`` / ``bearer_matches`` (a token given by a client against the
configured one, in constant time). ``FACES`` has one row per face that
listens: the explorer (``chunknav gui`` and its per-session gate in
``explorer/access.py``) and ``chunknav mcp --http``.

The rule, the same for every face: with its token set, a face serves any
address and every client must present the token; without it, a face serves
only a loopback bind address and loopback clients.

Imports no face framework and nothing above ``engine.errors``.
"""

from __future__ import annotations

import hmac
import ipaddress
from dataclasses import dataclass

from engine.errors import SettingsError

__all__ = [
    "Face",
    "EXPLORER",
    "MCP_HTTP",
    "FACES",
    "is_loopback",
    "exposed",
    "refusal",
    "check",
    "reach",
    "token_matches",
    "bearer_matches",
]


@dataclass(frozen=True, slots=True)
class Face:
    """A face that listens on an address.

    Attributes:
        name: how a refusal names the face ("the explorer").
        token_env: the environment variable of its token setting.
        token_key: the same setting in ``chunknav.toml``.
        with_token: what a client does once the token is set, for people.
    """

    name: str
    token_env: str
    token_key: str
    with_token: str


#: The Streamlit explorer: ``chunknav gui`` refuses to start, a session is refused.
EXPLORER = Face(
    "the explorer",
    "CHUNKNAV_ACCESS_TOKEN",
    "access_token",
    "the explorer then asks for it once per browser session; add CHUNKNAV_READ_ONLY=true to hide "
    "Rebuild and collection changes",
)
#: The MCP server over streamable HTTP (stdio reaches no network).
MCP_HTTP = Face(
    "chunknav mcp --http",
    "CHUNKNAV_MCP_TOKEN",
    "mcp_token",
    "clients then send 'Authorization: Bearer <token>'",
)
#: Every face that listens on an address.
FACES = (EXPLORER, MCP_HTTP)


def is_loopback(address: str) -> bool:
    """True when ``address`` reaches this machine only.

    Args:
        address: a host name or IP address, optionally in ``[...]`` and padded.

    Returns:
        True for ``localhost``, ``localhost.localdomain``, 127.0.0.0/8 and
        ``::1`` (any case); False for ``0.0.0.0``, ``::``, ``""`` (every
        interface, as Streamlit reads it) and any other host.
    """
    a = address.strip().strip("[]").lower()
    if a in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(a).is_loopback
    except ValueError:
        return False


def _shown(bind: str) -> str:
    return bind or "every interface"


def exposed(bind: str | None, client: str | None = None) -> str | None:
    """Where a face is reachable from beyond loopback, or None.

    Args:
        bind: the address the face listens on (``""``: every interface);
            None when it is not known (a server started by hand), and then
            only ``client`` is judged.
        client: the IP address a client connects from, when known.

    Returns:
        ``"bound to <bind>"`` or ``"reached from <client>"``, or None when
        both are loopback (or unknown).
    """
    if bind is not None and not is_loopback(bind):
        return f"bound to {_shown(bind)}"
    if client and not is_loopback(client):
        return f"reached from {client}"
    return None


def refusal(face: Face, bind: str | None, token: str, client: str | None = None) -> str | None:
    """Why ``face`` may not serve, naming its token setting; None when it may.

    Args:
        face: a ``FACES`` row.
        bind: the listen address, or None when unknown (see ``exposed``).
        token: the face's configured token ("" when unset).
        client: the connecting client's IP address, when known.

    Returns:
        None when the token is set or the face is reachable from loopback
        only; else one sentence for the operator.
    """
    where = None if token else exposed(bind, client)
    if where is None:
        return None
    return (
        f"refusing to serve {face.name}: it is {where}, beyond loopback, and {face.token_env} is not set, "
        f"so anyone who reaches it could read the index and the files under its collections. "
        f"Set {face.token_env} ({face.token_key} in chunknav.toml; {face.with_token}), or bind 127.0.0.1"
    )


def check(face: Face, bind: str, token: str) -> None:
    """Refuse to start ``face`` on ``bind`` without its token when that is beyond loopback.

    Raises:
        SettingsError: the ``refusal`` sentence (names the setting and the address).
    """
    why = refusal(face, bind, token)
    if why:
        raise SettingsError(why)


def reach(bind: str) -> str:
    """Who can reach a face bound to ``bind``, for a startup line: ``loopback only``,
    ``every interface`` (``""``, ``0.0.0.0``, ``::``) or ``non-loopback``."""
    if is_loopback(bind):
        return "loopback only"
    return "every interface" if bind in ("", "0.0.0.0", "::") else "non-loopback"


def token_matches(given: str | bytes, token: str) -> bool:
    """True when a client's ``given`` token equals the configured ``token``.

    Compared with ``hmac.compare_digest`` over UTF-8 bytes (the time taken
    does not depend on where they differ). An empty ``token`` (none
    configured) matches nothing.
    """
    if not token:
        return False
    given_bytes = given.encode("utf-8") if isinstance(given, str) else given
    return hmac.compare_digest(given_bytes, token.encode("utf-8"))


def bearer_matches(authorization: str | bytes, token: str) -> bool:
    """True when an HTTP ``Authorization`` header value is exactly ``Bearer <token>``
    (``token_matches``); an empty ``token`` matches nothing."""
    return bool(token) and token_matches(authorization, f"Bearer {token}")
