"""The HTTP embedding providers: Ollama and OpenAI wire formats, retries, auto-detection.

Owns: ``OllamaEmbedder`` (``POST {EMBED_URL}/api/embed``), ``OpenAIEmbedder``
(``POST {EMBED_URL}/v1/embeddings``: OpenAI, llama.cpp server, TEI, vLLM),
their shared client (per-thread ``requests.Session``, batching, bounded retries
with backoff and ``Retry-After``), the reading of HTTP statuses, server error
bodies and transport exceptions into ``EmbedFailure`` values (with
``classify`` from ``engine.embed.base``), the known model input limits
(``known_input_limit_chars``) and ``EMBED_PROVIDER=auto`` detection (``detect``).
The rules are in ``engine.embed``'s module docstring.

Must not import: ``engine.embed`` or ``engine.embed.local`` (``engine.embed``
imports this module), ``wordllama``, any store, or a face (streamlit, mcp,
argparse). Imports ``engine.config``, ``engine.errors`` and
``engine.embed.base``. Logs under ``engine.embed``.
"""

from __future__ import annotations

import dataclasses

import email.utils
import json
import logging
import random
import re
import threading
import time
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from engine.lazy import np  # numpy on first use (engine.lazy)
from engine.lazy import requests  # requests on first use (engine.lazy)

from engine.config import Settings
from engine.embed.base import BaseEmbedder, EmbedFailure, classify, log_failure
from engine.errors import EmbedError, SettingsError
from engine.secrets import register as register_secrets, register_url

__all__ = [
    "OllamaEmbedder",
    "OpenAIEmbedder",
    "detect",
    "known_input_limit_chars",
    "OLLAMA_DEFAULT_URL",
    "OPENAI_DEFAULT_URL",
]

# One logger for every provider module, as before the split (operators filter on it).
logger = logging.getLogger("engine.embed")

OLLAMA_DEFAULT_URL = "http://127.0.0.1:11434"
OPENAI_DEFAULT_URL = "https://api.openai.com"

#: Known input limits in tokens, by model name (tag and "org/" prefix ignored).
_KNOWN_INPUT_TOKENS: dict[str, int] = {
    "text-embedding-3-small": 8191,
    "text-embedding-3-large": 8191,
    "text-embedding-ada-002": 8191,
    "nomic-embed-text": 2048,  # Ollama's context length for it
    "mxbai-embed-large": 512,
    "all-minilm": 512,
    "snowflake-arctic-embed": 512,
    "snowflake-arctic-embed2": 8192,
    "bge-m3": 8192,
    "bge-large": 512,
    "bge-base-en-v1.5": 512,
    "bge-small-en-v1.5": 512,
    "granite-embedding": 512,
    "embeddinggemma": 2048,
    "qwen3-embedding": 32768,
}
#: Tokens of an unknown model: the common BERT-family limit.
_DEFAULT_INPUT_TOKENS = 512
#: Characters per token used to turn a token limit into characters; low on
#: purpose (English prose is ~4, dense PDF text with numbers ~2.5-3).
_CHARS_PER_TOKEN = 3

_RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
#: llama.cpp server's deterministic refusal of an input longer than its
#: physical batch: HTTP 500 "input (992 tokens) is too large to process.
#: increase the physical batch size (current batch size: 512)"; never retried.
_LLAMACPP_TOO_LARGE = re.compile(r"input (\((?P<got>\d+) tokens\) )?is too large to process", re.I)
_LLAMACPP_BATCH = re.compile(r"current batch size: (?P<limit>\d+)", re.I)
#: OpenAI's 400 "maximum context length is 8192 tokens, however you requested 9314 tokens".
_OPENAI_CONTEXT = re.compile(
    r"maximum context length is (?P<limit>\d+) tokens.*?requested (?P<got>\d+) tokens", re.I | re.S
)
#: A rate-limit body's own hint, e.g. OpenAI's "Please try again in 2.812s" / "in 20ms" / "in 1m30s".
_TRY_AGAIN = re.compile(
    r"try again in\s+(?:(?P<m>\d+(?:\.\d+)?)m(?!s))?\s*(?:(?P<s>\d+(?:\.\d+)?)s)?"
    r"\s*(?:(?P<ms>\d+(?:\.\d+)?)ms)?",
    re.I,
)
#: Sleeps between attempts (a test monkeypatches this, never the network).
_sleep = time.sleep
_TOO_LONG = re.compile(
    r"context length|maximum context|too long|too many tokens|exceeds|must have less than|"
    r"input length|max(imum)?[_ ]?(input|sequence)",
    re.I,
)


def _public_url(url: str) -> str:
    """``url`` without user-info, query or fragment (they may hold credentials)."""
    p = urlsplit(url)
    host = p.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{p.port}" if p.port else host
    return urlunsplit((p.scheme, netloc, p.path, "", ""))


def _server_error(body: str) -> tuple[str, str | None, bool]:
    """(server's message, error code or type, is_structured_json) from an error body.

    Reads Ollama ``{"error": "..."}``, OpenAI / llama.cpp ``{"error": {"message",
    "type", "code"}}``, vLLM ``{"message", "type"}``, FastAPI ``{"detail"}``;
    anything else gives its first 200 characters.
    """
    try:
        data = json.loads(body)
    except ValueError:
        return body.strip()[:200], None, False
    if not isinstance(data, dict):
        return body.strip()[:200], None, False
    err = data.get("error")
    if isinstance(err, str):
        return err, data.get("error_type"), True
    if isinstance(err, dict):
        code = err.get("code")
        return str(err.get("message", "")), str(code) if code is not None else err.get("type"), True
    if "message" in data:
        return str(data["message"]), data.get("type"), True
    if "detail" in data:
        return str(data["detail"]), None, True
    return body.strip()[:200], None, True


def known_input_limit_chars(model: str) -> int:
    """The input limit of an HTTP ``model``, in characters (conservative).

    Known token limits (``_KNOWN_INPUT_TOKENS``, matched without ``:tag`` or
    ``org/`` prefix, or by prefix) times 3 characters per token; an unknown
    model gets 512 tokens -> 1536 characters. ``EMBED_MAX_INPUT_CHARS``
    overrides this in ``make_embedder``.
    """
    name = model.lower().rsplit("/", 1)[-1].split(":", 1)[0]
    tokens = _KNOWN_INPUT_TOKENS.get(name)
    if tokens is None:
        for known in sorted(_KNOWN_INPUT_TOKENS, key=len, reverse=True):
            if name.startswith(known):
                tokens = _KNOWN_INPUT_TOKENS[known]
                break
    return (tokens or _DEFAULT_INPUT_TOKENS) * _CHARS_PER_TOKEN


# --------------------------------------------------------------------------- HTTP


def _is_loopback(url: str) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    return host in ("localhost", "::1") or host.startswith("127.")


def _retry_after_s(headers: Any) -> float | None:
    """Seconds the server asked us to wait (``retry-after-ms`` or ``Retry-After``), or None."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("Retry-After")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _body_retry_hint_s(body: str) -> float | None:
    """Seconds a 429 body asks us to wait ("Please try again in 2.812s"), or None."""
    msg, _, _ = _server_error(body)
    for text in (msg, body):
        m = _TRY_AGAIN.search(text or "")
        if m and any(m.group(g) for g in ("m", "s", "ms")):
            return float(m.group("m") or 0) * 60 + float(m.group("s") or 0) + float(m.group("ms") or 0) / 1000.0
    return None


def _llamacpp_too_large(status: int, body: str) -> bool:
    """llama.cpp server's deterministic ``500 input is too large`` refusal."""
    if status != 500:
        return False
    msg, _, _ = _server_error(body)
    return bool(_LLAMACPP_TOO_LARGE.search(msg or body))


class _HTTPEmbedder(BaseEmbedder):
    """Shared HTTP client: per-thread ``requests.Session``, batching, retries."""

    route = ""
    wire = ""

    def __init__(
        self,
        url: str,
        model: str,
        *,
        api_key: str = "",
        dim: int = 0,
        batch: int = 32,
        timeout_s: float = 30.0,
        retries: int = 3,
        max_input_chars: int = 0,
        backoff_s: float = 0.5,
        max_backoff_s: float = 8.0,
        max_retry_after_s: float = 30.0,
    ):
        """
        Args:
            url: base URL (``EMBED_URL``), scheme http/https; a trailing ``/v1``
                is dropped for the OpenAI route.
            model: model name (``EMBED_MODEL``), required.
            api_key: bearer key (``EMBED_API_KEY``); sent as ``Authorization``,
                never logged or shown.
            dim: expected dimension (``EMBED_DIM``); 0 = the probe's.
            batch: texts per request (``EMBED_BATCH``).
            timeout_s: connect and read timeout of one request, seconds.
            retries: extra attempts for 408/429/5xx/timeouts/refused (``EMBED_RETRIES``).
            max_input_chars: refuse longer texts before sending, characters;
                0 = ``known_input_limit_chars(model)``.
            backoff_s: first backoff delay, seconds; doubles per attempt, with jitter.
            max_backoff_s: cap of one backoff delay, seconds.
            max_retry_after_s: longest ``Retry-After`` we wait, seconds; a longer
                one ends the call at once (reported in the message).

        Raises:
            SettingsError: url without http(s) scheme (EMBED_URL) or no model (EMBED_MODEL).
        """
        if not model:
            raise SettingsError(
                f"EMBED_MODEL must name the {self.wire} embedding model "
                f"(e.g. nomic-embed-text, text-embedding-3-small); it is empty"
            )
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise SettingsError(
                f"EMBED_URL must be an http(s) URL such as {OLLAMA_DEFAULT_URL}, "
                f"got {_public_url(url) if parts.hostname else url[:40]!r}"
            )
        super().__init__(expected_dim=dim, max_input_chars=max_input_chars or known_input_limit_chars(model))
        self.base_url = self._base(url.rstrip("/"))
        self.model = model
        self.endpoint = _public_url(self.base_url + self.route)
        self._url = self.base_url + self.route
        self._api_key = api_key
        register_secrets(api_key)  # engine.secrets: every face redacts it, in every form
        register_url(url)  # the userinfo of EMBED_URL (sent as Authorization: Basic)
        self.batch = batch
        self.timeout_s = timeout_s
        self.retries = retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.max_retry_after_s = max_retry_after_s
        self._local = threading.local()
        self._proxies = {"http": None, "https": None, "all": None} if _is_loopback(url) else None

    def _base(self, url: str) -> str:
        return url

    def _secrets(self) -> tuple[str, ...]:
        return (self._api_key,) if self._api_key else ()

    def _session(self) -> requests.Session:
        s = getattr(self._local, "session", None)
        if s is None:
            s = requests.Session()
            if self._api_key:
                s.headers["Authorization"] = f"Bearer {self._api_key}"
            s.headers["User-Agent"] = "chunknav-embed"
            self._local.session = s
        return s

    # -- wire-format specifics --------------------------------------------------
    def _payload(self, texts: list[str], truncate: bool = False) -> dict[str, Any]:  # pragma: no cover
        raise NotImplementedError

    def _extract(self, data: Any) -> Any:  # pragma: no cover
        """Parsed 2xx JSON -> list of vectors (or None when absent)."""
        raise NotImplementedError

    # -- the loop ------------------------------------------------------------------
    def _embed_raw(self, texts: list[str], probing: bool) -> np.ndarray:
        parts = [self._request(texts[i : i + self.batch]) for i in range(0, len(texts), self.batch)]
        return np.concatenate(parts, axis=0) if len(parts) > 1 else parts[0]

    def _request(self, texts: list[str], truncate: bool = False) -> np.ndarray:
        attempt = 0
        while True:
            failure, retryable, retry_after = self._attempt(texts, truncate)
            if isinstance(failure, np.ndarray):
                return failure
            if retryable and attempt < self.retries:
                if retry_after is not None and retry_after > self.max_retry_after_s:
                    failure = self._failure(
                        failure.code,
                        f"{failure.message}; the server asked to retry after {retry_after:.0f} s, "
                        f"longer than the {self.max_retry_after_s:.0f} s we wait, so not retried",
                        failure.status_code,
                        failure.body,
                    )
                    self._fail(failure)
                delay = (
                    retry_after
                    if retry_after is not None
                    else min(self.max_backoff_s, self.backoff_s * (2**attempt)) * (0.5 + random.random() / 2)
                )
                attempt += 1
                logger.info(
                    "embedding attempt %d/%d failed (%s, status=%s, endpoint=%s); retrying in %.3fs",
                    attempt,
                    self.retries + 1,
                    failure.code,
                    failure.status_code,
                    self.endpoint,
                    delay,
                )
                _sleep(delay)
                continue
            if retryable and attempt:
                failure = self._failure(
                    failure.code,
                    f"{failure.message} (gave up after {attempt + 1} attempts)",
                    failure.status_code,
                    failure.body,
                )
            self._fail(failure)

    def _attempt(self, texts: list[str], truncate: bool = False) -> tuple[Any, bool, float | None]:
        """One POST -> (vectors | EmbedFailure, retryable, retry_after_s)."""
        try:
            resp = self._session().post(
                self._url, json=self._payload(texts, truncate), timeout=self.timeout_s, proxies=self._proxies
            )
        except requests.Timeout as e:
            what = "connect" if isinstance(e, requests.ConnectTimeout) else "answer"
            return (
                self._failure(
                    "embedding-unavailable",
                    f"no {what} from {self.endpoint} within {self.timeout_s:g} s (EMBED_TIMEOUT); the server is "
                    f"down or overloaded: its owner must check it, or raise EMBED_TIMEOUT",
                    None,
                ),
                True,
                None,
            )
        except requests.exceptions.SSLError as e:
            return (
                self._failure(
                    "embedding-unavailable",
                    f"TLS with {self.endpoint} failed ({_short_reason(e)}); retrying cannot help: the operator "
                    f"must fix EMBED_URL or the server's certificate",
                    None,
                ),
                False,
                None,
            )
        except requests.ConnectionError as e:
            reason = _short_reason(e)
            return (
                self._failure(
                    "embedding-unavailable",
                    f"could not connect to {self.endpoint}: {reason}; is the {self.wire} server running at "
                    f"EMBED_URL={_public_url(self.base_url)}? (the operator must start it or fix EMBED_URL)",
                    None,
                ),
                True,
                None,
            )
        except requests.RequestException as e:
            return (
                self._failure("embedding-unavailable", f"request to {self.endpoint} failed: {_short_reason(e)}", None),
                False,
                None,
            )
        status = resp.status_code
        body = resp.text
        if 200 <= status < 300:
            try:
                data = resp.json()
            except ValueError:
                return (
                    self._failure(
                        "embedding-unavailable",
                        f"{self.endpoint} answered HTTP {status} with a body that is not JSON; "
                        f"is EMBED_URL a {self.wire} server?",
                        status,
                        body,
                    ),
                    False,
                    None,
                )
            if isinstance(data, dict) and data.get("error"):
                msg, _, _ = _server_error(body)
                return (
                    self._failure(
                        "embedding-unavailable",
                        f"{self.endpoint} answered HTTP {status} with an error instead of vectors: {msg}; "
                        f"the server's owner must check it",
                        status,
                        body,
                    ),
                    False,
                    None,
                )
            raw = self._extract(data)
            return self._vectors(raw, len(texts), status, body), False, None
        wait = _retry_after_s(resp.headers)
        if wait is None and status == 429:
            wait = _body_retry_hint_s(body)  # after the headers, before exponential backoff
        return self._http_failure(status, body), self._retryable(status, body), wait

    def _retryable(self, status: int, body: str) -> bool:
        if status == 429:
            return not _is_quota(body)
        if _llamacpp_too_large(status, body):
            return False  # deterministic: the same input gives the same 500
        return status in _RETRY_STATUSES or (status >= 500 and status not in (501, 505))

    def cut_hint(self, failure: EmbedFailure, n_chars: int) -> int:
        """Characters to keep on the retry of a refused text (``BaseEmbedder.cut_hint``):
        the server's own token counts scale the text (with 10 % margin), else
        the base rule."""
        msg, _, _ = _server_error(failure.body)
        limit = got = None
        m = _OPENAI_CONTEXT.search(msg or "")
        if m:
            limit, got = int(m.group("limit")), int(m.group("got"))
        else:
            m1, m2 = _LLAMACPP_TOO_LARGE.search(msg or ""), _LLAMACPP_BATCH.search(msg or "")
            if m1 and m1.group("got") and m2:
                limit, got = int(m2.group("limit")), int(m1.group("got"))
        if limit and got and got > limit:
            return max(1, int(n_chars * limit / got * 0.9))
        return super().cut_hint(failure, n_chars)

    def _http_failure(self, status: int, body: str) -> EmbedFailure:
        msg, code_or_type, structured = _server_error(body)
        said = f"HTTP {status}: {msg}" if msg else f"HTTP {status}"
        code = classify(status)
        refused = status in (400, 413, 422)  # deterministic refusals of this request's content
        if _llamacpp_too_large(status, body):
            return self._failure(
                "embedding-request-rejected",
                f"{self.endpoint} refused an input as too large for its physical batch ({said}); not "
                f"retried (the same input gives the same answer): the operator must lower "
                f"CHUNKNAV_CHUNK_SIZE or EMBED_MAX_INPUT_CHARS, or start llama-server with a larger "
                f"-b/-ub",
                status,
                body,
                input_refused=True,
            )
        if status == 401:
            hint = (
                "no EMBED_API_KEY is set; the operator must set one"
                if not self._api_key
                else "the operator must set a valid EMBED_API_KEY for this endpoint"
            )
            text = f"{self.endpoint} refused the credential ({said}); {hint}"
        elif status == 403:
            text = (
                f"{self.endpoint} refused access for model {self.model!r} ({said}); the operator must use "
                f"an EMBED_API_KEY allowed to use this model, or fix the server's access rules"
            )
        elif status in (404, 405) and "model" not in msg.lower():
            other = "ollama" if self.wire == "OpenAI" else "openai"
            text = (
                f"{self.endpoint} has no {self.route} route ({said}): EMBED_URL is wrong, or the server "
                f"does not speak the {self.wire} wire format or is too old for this route; the operator "
                f"must fix EMBED_URL, or set EMBED_PROVIDER={other} or auto"
            )
        elif status == 404:
            pull = f" (run `ollama pull {self.model}` on the server)" if self.wire == "Ollama" else ""
            text = (
                f"model {self.model!r} is not available at {self.endpoint} ({said}); the operator must "
                f"install it{pull} or fix EMBED_MODEL"
            )
        elif status in (400, 413, 422) and _TOO_LONG.search(msg or ""):
            text = (
                f"{self.endpoint} refused an input as too long for model {self.model!r} ({said}); "
                f"our limit was {self.max_input_chars} characters: the operator must lower "
                f"CHUNKNAV_CHUNK_SIZE or set EMBED_MAX_INPUT_CHARS below it"
            )
        elif status in (400, 422):
            text = (
                f"{self.endpoint} refused the request for model {self.model!r} ({said}); the operator "
                f"must check EMBED_MODEL and EMBED_URL"
            )
        elif status == 429 and _is_quota(body):
            text = (
                f"{self.endpoint}: the account's quota is exhausted ({said}); the account owner must add "
                f"credit or raise the quota; not retried"
            )
        elif status == 429:
            text = f"{self.endpoint} is rate-limiting us ({said}); retry later or lower EMBED_BATCH"
        elif status >= 500:
            text = f"{self.endpoint} failed on the server side ({said}); the server's owner must fix it, or retry later"
        else:
            text = f"{self.endpoint} answered {said}"
        failure = self._failure(code, text, status, body, input_refused=refused)
        if status == 429 and _is_quota(body):  # not a server that will answer later
            failure = dataclasses.replace(
                failure, who_fixes="the account owner: add credit or raise the quota at the provider (not retried)"
            )
        return failure


def _is_quota(body: str) -> bool:
    _, code, _ = _server_error(body)
    return code == "insufficient_quota" or "insufficient_quota" in body


def _short_reason(e: BaseException) -> str:
    text = str(e)
    for pat in (
        "Connection refused",
        "Name or service not known",
        "No route to host",
        "Temporary failure in name resolution",
        "Connection reset",
        "certificate verify failed",
        "Network is unreachable",
    ):
        if pat.lower() in text.lower():
            return pat.lower()
    return f"{type(e).__name__}: {text[:200]}"


class OllamaEmbedder(_HTTPEmbedder):
    """Ollama's native wire format: ``POST {url}/api/embed``.

    Sends ``{"model", "input": [...], "truncate": false}`` so an over-long
    input is refused (HTTP 400, "input length exceeds the context length")
    rather than silently cut; reads ``{"embeddings": [[...], ...]}``.
    """

    provider = "ollama"
    route = "/api/embed"
    wire = "Ollama"

    def _payload(self, texts: list[str], truncate: bool = False) -> dict[str, Any]:
        return {"model": self.model, "input": texts, "truncate": bool(truncate)}

    def embed_truncated(self, text: str, limit_chars: int) -> tuple[np.ndarray, int]:
        """Retry one refused text with ``"truncate": true``: Ollama cuts it at the
        model's context length itself (exact, in tokens). Returns (vector float32
        shape (dim,) L2-normalised, characters sent = ``len(text)``); a text over
        10x ``max_input_chars`` is cut client-side to that first. Raises EmbedError."""
        if not self._probed:
            self.probe()
        cap = 10 * self.max_input_chars if self.max_input_chars else len(text)
        cut = text[: max(1, cap)]  # limit_chars is not needed: the server knows its context
        return self._request([cut], truncate=True)[0], len(cut)

    def _extract(self, data: Any) -> Any:
        return data.get("embeddings") if isinstance(data, dict) else None


class OpenAIEmbedder(_HTTPEmbedder):
    """The OpenAI wire format: ``POST {url}/v1/embeddings`` with a bearer key.

    Works with OpenAI, llama.cpp server, TEI and vLLM. Sends ``{"model",
    "input": [...], "encoding_format": "float"}``; reads ``{"data": [{"index",
    "embedding"}, ...]}`` in ``index`` order. A base URL ending in ``/v1`` is
    accepted (the suffix is not doubled).
    """

    provider = "openai"
    route = "/v1/embeddings"
    wire = "OpenAI"

    def _base(self, url: str) -> str:
        return url[:-3] if url.endswith("/v1") else url

    def _payload(self, texts: list[str], truncate: bool = False) -> dict[str, Any]:
        return {"model": self.model, "input": texts, "encoding_format": "float"}

    def _extract(self, data: Any) -> Any:
        items = data.get("data") if isinstance(data, dict) else None
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            return None
        if all(isinstance(i.get("index"), int) for i in items):
            items = sorted(items, key=lambda i: i["index"])
        return [i.get("embedding") for i in items]


# --------------------------------------------------------------------------- factory


def _route_missing(failure: EmbedFailure) -> bool:
    """True when an error answer says "no such route" rather than anything about the request."""
    if failure.status_code not in (404, 405):
        return False
    message, _, _ = _server_error(failure.body)
    return "model" not in message.lower()


def _ollama_shaped(failure: EmbedFailure) -> bool:
    """True when a failed /api/embed probe was answered by Ollama itself (or by nothing)."""
    if failure.status_code is None:
        return True  # nothing answered: no point trying another route
    try:
        data = json.loads(failure.body)
    except ValueError:
        return False
    return isinstance(data, dict) and isinstance(data.get("error"), str) and not _route_missing(failure)


def detect(url: str, settings: Settings, kwargs: dict[str, Any]) -> _HTTPEmbedder:
    """EMBED_PROVIDER=auto: probe /api/embed, then /v1/embeddings; return the one that answered.

    Args:
        url: base URL (``EMBED_URL``, default Ollama's).
        settings: ``embed_model`` is read.
        kwargs: the HTTP embedder's keyword arguments (key, dim, batch, timeouts, retries).

    Returns:
        The embedder whose probe answered like its server, already probed.

    Raises:
        EmbedError: the answering server's own failure (classified), or
            ``neither wire format answered`` when both routes are missing.
    """
    ollama = OllamaEmbedder(url, settings.embed_model, **kwargs)
    ollama._log_failures = False
    try:
        ollama.probe()
        logger.info("EMBED_PROVIDER=auto: %s speaks the Ollama wire format", _public_url(url))
        return ollama
    except EmbedError as e:
        if _ollama_shaped(e.failure):
            log_failure(e.failure)
            raise
        first = e.failure
    openai = OpenAIEmbedder(url, settings.embed_model, **kwargs)
    openai._log_failures = False
    try:
        openai.probe()
        logger.info("EMBED_PROVIDER=auto: %s speaks the OpenAI wire format", _public_url(url))
        return openai
    except EmbedError as e:
        f = e.failure
        if not _route_missing(f):  # an OpenAI-style server answered: its own failure stands
            log_failure(f)
            raise
        failure = EmbedFailure(
            code=f.code,
            status_code=f.status_code,
            endpoint=f.endpoint,
            model=f.model,
            body=f.body,
            message=(
                f"EMBED_PROVIDER=auto: neither wire format answered at {_public_url(url)}: "
                f"/api/embed gave HTTP {first.status_code} and /v1/embeddings HTTP {f.status_code}; "
                f"the operator must fix EMBED_URL (the server's base URL, e.g. {OLLAMA_DEFAULT_URL})"
            ),
        )
        log_failure(failure)
        raise EmbedError(failure) from None
