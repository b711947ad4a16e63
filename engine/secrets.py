"""Secrets never leave the process: the one redaction function every face uses.

Owns: the process-wide set of configured secrets (``register``,
``register_url``), ``redact`` (text), ``redact_obj``
(an envelope: every string inside), ``public_dsn`` (a database URL without
its password) and ``install_log_redaction`` (every log record, whatever its
logger or handler, is redacted when it is created).

A secret is known in every form it can come back in:

* raw, and inside URLs: the API key, the password and the ``user:password``
  userinfo of ``EMBED_URL`` / ``CHUNKNAV_DSN``, PDF passwords of the
  collections, the explorer's access token, any setting whose unit is
  ``secret`` (the MCP token among them);
* JSON-escaped, character by character or mixed (``\\u0073k-…``, ``\\/``);
* URL-encoded (``%73k-…``, ``+`` for a space), mixed with raw characters;
* base64 (standard and URL-safe, with or without padding), which covers
  ``Authorization: Basic base64(user:password)``, also inside the base64 of a
  larger string at any alignment (``base64("Bearer " + key)`` in a logged header);
* hex of its bytes, lower or upper case.

Besides the registered strings, ``Bearer <token>``, ``Basic <base64>`` and
``sk-…`` keys are always replaced. Strings shorter than ``MIN_SECRET_CHARS``
are not registered (redacting two letters would wreck every message).

Imports nothing from the engine and no face; ``engine.config``,
``engine.embed`` and every face import this module.
"""

from __future__ import annotations

import base64
import functools
import logging
import re
import threading
import traceback
from typing import Any, Iterable
from urllib.parse import quote, unquote, urlsplit, urlunsplit

__all__ = [
    "MARK",
    "MIN_SECRET_CHARS",
    "register",
    "register_url",
    "known_count",
    "redact",
    "redact_obj",
    "public_dsn",
    "secret_forms",
    "install_log_redaction",
]

#: What a secret is replaced with.
MARK = "[REDACTED]"
#: Shorter strings are never registered as secrets.
MIN_SECRET_CHARS = 4
# base64 inside a larger string is matched from 6 bytes of the secret (8 characters) on:
# shorter runs would match unrelated base64 text
_MIN_INNER_BYTES = 6

_lock = threading.Lock()
_secrets: set[str] = set()
_pattern: re.Pattern[str] | None = None
_literals: tuple[str, ...] = ()  # raw and base64 forms, longest first (replaced as substrings)
_reach = 0  # longest escaped form of any secret, characters (12 per character at most)
_ESCAPE = r"[\\%+]"

# generic credential shapes (``generic=True``: provider bodies, where any of them is a credential)
# (a token may hold a registered secret redacted already: "[REDACTED]" is taken whole, no stray "]")
_BEARER = r"(?i)\b(bearer)\s+(?:\[REDACTED\]|[^\s\"',;}\]\\])+"
_BASIC = r"(?i)\b(basic)\s+[A-Za-z0-9+/_\-]{6,}={0,2}"
_SK = r"\bsk-[A-Za-z0-9_\-*.]{6,}"
# the same shapes, strict enough for document text ("a basic concept", "the bearer of")
_BEARER_STRICT = r"(?i)\b(bearer)\s+(?=[A-Za-z0-9._~+/\-]*\d)[A-Za-z0-9._~+/\-]{16,}=*"
_BASIC_STRICT = r"(?i)\b(basic)\s+([A-Za-z0-9+/_\-]{4,}={0,2})"
_SK_STRICT = r"\bsk-[A-Za-z0-9_\-]{20,}"


@functools.cache
def _compiled(pattern: str) -> re.Pattern[str]:
    """One of the patterns above, compiled on first use: most processes never need one
    (``redact`` runs them only when the text holds their keyword), and compiling all
    of them took ~1 ms of every process start."""
    return re.compile(pattern)


def _basic_credential(m: re.Match[str]) -> str:
    """``Basic <base64>`` -> redacted when the base64 decodes to ``user:password``."""
    token = m.group(2)
    try:
        decoded = base64.b64decode(
            token + "=" * (-len(token) % 4), altchars=b"-_" if "-" in token or "_" in token else None, validate=True
        ).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return m.group(0)
    return f"{m.group(1)} {MARK}" if ":" in decoded else m.group(0)


def _char_alternatives(ch: str) -> str:
    """Regex of one character in any of its raw / JSON-escaped / URL-encoded forms."""
    alts = [re.escape(ch)]
    code = ord(ch)
    if code <= 0xFFFF:
        alts.append(r"\\u" + "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else c for c in f"{code:04x}"))
    else:  # a JSON surrogate pair
        hi = 0xD800 + ((code - 0x10000) >> 10)
        lo = 0xDC00 + ((code - 0x10000) & 0x3FF)
        alts.append(f"(?i:\\\\u{hi:04x}\\\\u{lo:04x})")
    if ch == "/":
        alts.append(r"\\/")
    if ch == '"':
        alts.append(r'\\"')
    if ch == "\\":
        alts.append(r"\\\\")
    if ch == " ":
        alts.append(r"\+")
    encoded = quote(ch, safe="")
    if encoded != ch:
        alts.append("(?i:" + re.escape(encoded) + ")")
    else:
        alts.append(f"(?i:%{code:02x})")
    return "(?:" + "|".join(alts) + ")"


def secret_forms(secret: str) -> list[str]:
    """The literal encodings of ``secret`` matched besides the per-character ones.

    * base64 of the secret alone (standard and URL-safe, padded and not);
    * base64 of a larger string that holds it (``base64("Bearer " + key)``): the
      secret may start at any of the three byte alignments of a base64 group, so for
      each alignment the run of characters that encodes only the secret's bytes
      (the whole groups from the first group boundary inside it) is matched; the
      at most two characters on either side that mix in a neighbour's bits stay;
    * hex of its UTF-8 bytes, lower and upper case (byte-aligned in any larger string).

    Mostly for tests.
    """
    raw = secret.encode("utf-8")
    forms = {base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()}
    forms |= {f.rstrip("=") for f in forms}
    for skip in (0, 1, 2):
        inner = raw[skip:]
        inner = inner[: len(inner) // 3 * 3]
        if len(inner) >= _MIN_INNER_BYTES:
            forms |= {base64.b64encode(inner).decode(), base64.urlsafe_b64encode(inner).decode()}
    forms |= {raw.hex(), raw.hex().upper()}
    return sorted(forms, key=len, reverse=True)


def _build() -> re.Pattern[str] | None:
    if not _secrets:
        return None
    parts = []
    for s in sorted(_secrets, key=len, reverse=True):
        parts.append("".join(_char_alternatives(ch) for ch in s))
        parts.extend(re.escape(f) for f in secret_forms(s))
    return re.compile("|".join(parts))


def register(*secrets: str | None) -> None:
    """Add secrets (None, "" and strings under ``MIN_SECRET_CHARS`` are ignored)."""
    global _pattern, _literals, _reach
    new = {s for s in secrets if s and len(s) >= MIN_SECRET_CHARS} - _secrets
    if not new:
        return
    with _lock:
        _secrets.update(new)
        _pattern = _build()
        _literals = tuple(sorted({f for s in _secrets for f in (s, *secret_forms(s))}, key=len, reverse=True))
        _reach = 12 * max(len(s) for s in _secrets)


def register_url(url: str | None) -> None:
    """Register the userinfo of a URL: the password, ``user:password``, and both
    percent-decoded (``http://user:p%40ss@host`` -> ``p@ss``)."""
    if not url or "@" not in url:
        return
    try:
        parts = urlsplit(url)
    except ValueError:
        return
    if parts.password is None:
        return
    user, password = parts.username or "", parts.password
    register(password, unquote(password), f"{user}:{password}", f"{unquote(user)}:{unquote(password)}")


def known_count() -> int:
    """How many secrets are registered (tests and the Status page)."""
    return len(_secrets)


def redact(text: str, extra: Iterable[str] = (), generic: bool = False) -> str:
    """Replace every registered secret, in every form, by ``[REDACTED]``.

    Args:
        text: any text bound for a person, a log, an envelope or a file.
        extra: further exact secrets for this call (also registered).
        generic: also replace every ``Bearer <word>``, ``Basic <base64>`` and
            ``sk-…`` shape (provider response bodies, where any of them is a
            credential). Without it only credential-looking ones go: ``Basic``
            whose base64 decodes to ``user:password``, ``Bearer`` + a 16+
            character token with a digit, ``sk-`` + 20+ characters; so document
            text ("a basic concept") is left alone.

    Returns:
        The redacted text. Never raises; a non-string is converted with ``str``.
    """
    if not isinstance(text, str):
        text = str(text)
    if extra:
        register(*extra)
    return _redact_text(text, generic)


def _redact_text(text: str, generic: bool = False) -> str:
    """``redact`` of one string (no extra secrets)."""
    pattern = _pattern
    if pattern is not None:
        text = _redact_registered(text, pattern)
    lower = text.lower() if len(text) < 1_000_000 else text
    if "bearer" in lower:
        text = _compiled(_BEARER if generic else _BEARER_STRICT).sub(rf"\1 {MARK}", text)
    if "basic" in lower:
        text = (
            _compiled(_BASIC).sub(rf"\1 {MARK}", text)
            if generic
            else _compiled(_BASIC_STRICT).sub(_basic_credential, text)
        )
    if "sk-" in text:
        text = _compiled(_SK if generic else _SK_STRICT).sub(f"sk-{MARK}", text)
    return text


def _redact_registered(text: str, pattern: re.Pattern[str]) -> str:
    """Registered secrets out of ``text``: raw and base64 forms by substring
    replacement; escaped forms (``\\u…``, ``%…``, ``+``) by the full pattern,
    run only on the windows around escape characters (an escaped form holds
    at least one and is at most ``_reach`` characters long)."""
    for form in _literals:
        if form in text:
            text = text.replace(form, MARK)
    reach = _reach
    windows: list[list[int]] = []
    for m in _compiled(_ESCAPE).finditer(text):
        a, b = max(0, m.start() - reach), m.end() + reach
        if windows and a <= windows[-1][1]:
            windows[-1][1] = b
        else:
            windows.append([a, b])
    if not windows:
        return text
    out, pos = [], 0
    for a, b in windows:
        out.append(text[pos:a])
        out.append(pattern.sub(MARK, text[a:b]))
        pos = b
    out.append(text[pos:])
    return "".join(out)


def redact_obj(obj: Any, json_only: bool = False) -> Any:
    """``obj`` (an envelope: dicts, lists, strings, numbers) with every string
    redacted, keys included: always a walk over every string (a new dict or list
    for each one met, tuples becoming lists; numbers, booleans and None as they are).

    Each distinct string of one envelope is redacted once and its answer reused for
    its repeats (the keys of thousands of boxes: ``x``, ``y``, ``w``, ``h``).

    Args:
        obj: the envelope.
        json_only: accept only what a JSON round trip gives back unchanged (exactly
            ``str``, ``int``, ``float``, ``bool``, None, lists, tuples, dicts with ``str``
            keys).

    Raises:
        TypeError: ``json_only`` and some value or key is of another type.
    """
    return _walk(obj, {}, json_only)


_JSON_SCALARS = (int, float, bool, type(None))


def _walk(obj: Any, done: dict[str, str], json_only: bool) -> Any:
    kind = type(obj)
    if kind is str or (not json_only and isinstance(obj, str)):
        out = done.get(obj)
        if out is None:
            out = done[obj] = _redact_text(obj)
        return out
    if kind is dict or (not json_only and isinstance(obj, dict)):
        if json_only and any(type(k) is not str for k in obj):
            raise TypeError("a dict key that is not a str")
        return {
            _walk(k, done, json_only) if isinstance(k, str) else k: _walk(v, done, json_only) for k, v in obj.items()
        }
    if kind is list or kind is tuple or (not json_only and isinstance(obj, (list, tuple))):
        return [_walk(v, done, json_only) for v in obj]
    if json_only and kind not in _JSON_SCALARS:
        raise TypeError(f"{kind.__name__} is not a JSON value")
    return obj


def public_dsn(dsn: str) -> str:
    """A database URL without its password (``postgresql://u@host/db``); the
    password is for ``PGPASSWORD`` or ``~/.pgpass``, never for a command line."""
    if not dsn:
        return dsn
    try:
        p = urlsplit(dsn)
    except ValueError:
        return redact(dsn)
    if p.password is None:
        return dsn
    host = p.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = (f"{p.username}@" if p.username else "") + host + (f":{p.port}" if p.port else "")
    return urlunsplit((p.scheme, netloc, p.path, p.query, p.fragment))


_factory_installed = False


def install_log_redaction() -> None:
    """Redact every log record when it is created (any logger, any handler):
    the formatted message, and the traceback text of ``exc_info``. Idempotent."""
    global _factory_installed
    with _lock:
        if _factory_installed:
            return
        _factory_installed = True
    previous = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: keep the record as it is
            return record
        clean = redact(message)
        if clean != message or record.args:
            record.msg, record.args = clean, None
        if record.exc_info and record.exc_info[0] is not None and not record.exc_text:
            record.exc_text = redact("".join(traceback.format_exception(*record.exc_info))).rstrip("\n")
        return record

    logging.setLogRecordFactory(factory)
