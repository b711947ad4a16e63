"""Embedding providers: text -> float32 vectors, and their failures as data.

Owns: the providers behind ``EMBED_PROVIDER`` (DESIGN.md "Embedding
providers"), the probe that runs before the first real call, batching,
bounded retries, and the one place where HTTP statuses and transport errors
are classified into an ``ErrorCode`` (``classify``) and carried down as an
``EmbedFailure`` inside ``engine.errors.EmbedError``. Later code copies the
failure's fields into envelopes and never reclassifies. Imports ``engine.config``
and ``engine.errors`` only; no face (streamlit, mcp, argparse), no store.

Providers:
    * ``local`` (default): WordLlama ``l2_supercat`` at 256 dimensions, in
      process. Its weights (16 MB) and tokenizer ship inside the ``wordllama``
      wheel, so it never touches the network: the tokenizer file is copied into
      a cache folder (``~/.cache/chunknav/wordllama``, or a temp folder when the
      home is not writable) under both ``tokenizer/`` and ``tokenizers/``
      (0.4.0.post1 looks in the wrong one, then would try a download) and the
      model is loaded with ``disable_download=True``, once per process.
      What it is: a static token-embedding table (Llama-2 BPE, 32k tokens)
      mean-pooled over the text. No attention, so word order and negation are
      invisible ("dog bites man" == "man bites dog"); good for topical
      similarity, weak for fine semantics; English-centred vocabulary.
      Long text: WordLlama does not truncate (it calls ``no_truncation()``);
      every token is averaged, so a long text's vector drifts towards the
      average of its topics, and a batch is padded to its longest member, so
      one long text makes the whole batch slow and large. We therefore sort a
      call's texts by length into batches bounded by ``embed_batch`` texts and
      a character budget, and refuse texts above ``LOCAL_MAX_INPUT_CHARS``
      (32,000 characters, about 8k tokens; ``EMBED_MAX_INPUT_CHARS`` overrides).
    * ``ollama``: ``POST {EMBED_URL}/api/embed`` with ``{"model", "input",
      "truncate": false}`` (Ollama would otherwise cut long input silently).
    * ``openai``: ``POST {EMBED_URL}/v1/embeddings`` with a bearer key
      (OpenAI, llama.cpp server, TEI, vLLM).
    * ``auto``: probes ``/api/embed`` then ``/v1/embeddings`` and keeps the
      first wire format that answers like its server.

Failure classification (STYLE.md §3), done where the response is seen:
401/403 -> ``embedding-credential-rejected``; 400/404/422 ->
``embedding-request-rejected``; 5xx, 429, refused connection, timeout ->
``embedding-unavailable``. Retried (bounded, exponential backoff, ``Retry-After``
/ ``retry-after-ms`` honoured): 408, 429 (not ``insufficient_quota``), 5xx but
501/505, timeouts and refused connections. Never retried: 400, 401, 403, 404,
422, an exhausted quota, a malformed 2xx answer. Not sent at all: a text longer
than the model's input limit (``embedding-request-rejected`` naming the limit).
A 2xx answer carrying an ``error``, lacking vectors, or with the wrong count is
``embedding-unavailable``; a dimension other than the configured/probed one is
``embedding-request-rejected`` naming ``EMBED_DIM``. Response bodies are kept
(redacted, at most ``BODY_LIMIT_CHARS``); the API key never appears in a
failure, a message or a log line.
"""

from __future__ import annotations

import email.utils
import json
import logging
import math
import os
import random
import re
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable
from urllib.parse import urlsplit, urlunsplit

import numpy as np
import requests

from engine.config import Settings
from engine.errors import EmbedError, ErrorCode, SettingsError

__all__ = [
    "EmbedFailure",
    "classify",
    "redact",
    "Embedder",
    "LocalEmbedder",
    "OllamaEmbedder",
    "OpenAIEmbedder",
    "make_embedder",
    "load_wordllama",
    "known_input_limit_chars",
    "PROBE_TEXT",
    "LOCAL_MODEL",
    "LOCAL_DIM",
    "LOCAL_MAX_INPUT_CHARS",
    "BODY_LIMIT_CHARS",
    "OLLAMA_DEFAULT_URL",
    "OPENAI_DEFAULT_URL",
]

logger = logging.getLogger(__name__)

#: The fixed text the probe embeds before the first real call.
PROBE_TEXT = "chunknav probe: the quick brown fox jumps over the lazy dog"
LOCAL_MODEL = "l2_supercat_256"
LOCAL_DIM = 256
#: Longest text the local model takes, in characters (see module docstring).
LOCAL_MAX_INPUT_CHARS = 32_000
#: Characters per local batch (texts x longest text) before a new batch starts.
LOCAL_BATCH_BUDGET_CHARS = 256_000
#: A response body is kept up to this many characters (after redaction).
BODY_LIMIT_CHARS = 2048
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
_TOO_LONG = re.compile(
    r"context length|maximum context|too long|too many tokens|exceeds|must have less than|"
    r"input length|max(imum)?[_ ]?(input|sequence)",
    re.I,
)


# --------------------------------------------------------------------------- failures


@dataclass(frozen=True, slots=True)
class EmbedFailure:
    """One classified provider outcome, copied unchanged into envelopes.

    Attributes:
        code: the ``ErrorCode`` (``classify`` of the HTTP status, or a 2xx /
            pre-check arm chosen where the evidence was seen).
        message: what happened and who must fix what; never holds the key.
        status_code: the HTTP status, None when no HTTP answer came
            (refused connection, timeout, a text refused before sending).
        endpoint: the URL called (no user-info, no query), ``"in-process"``
            for the local model.
        model: the model name asked for.
        body: the server's response body, secrets redacted, at most
            ``BODY_LIMIT_CHARS`` characters ("" when there was none).
    """

    code: ErrorCode
    message: str
    status_code: int | None = None
    endpoint: str = ""
    model: str = ""
    body: str = ""

    def to_fields(self) -> dict[str, Any]:
        """Envelope fields (``envelopes.FailureFields``): ``error``, ``message``,
        ``endpoint``, ``model``, ``statusCode``, ``responseBody``."""
        return {
            "error": self.code,
            "message": self.message,
            "endpoint": self.endpoint,
            "model": self.model,
            "statusCode": self.status_code,
            "responseBody": self.body,
        }


def classify(status: int | None) -> ErrorCode:
    """One provider outcome -> code. status None: no HTTP answer (timeout, refused)."""
    if status in (401, 403):
        return "embedding-credential-rejected"
    if status in (400, 404, 422):
        return "embedding-request-rejected"
    return "embedding-unavailable"  # 5xx, 429, None (DESIGN table)


_BEARER = re.compile(r"(?i)\b(bearer)\s+[^\s\"',;}]+")
_SK = re.compile(r"\bsk-[A-Za-z0-9_\-*.]{6,}")


def redact(text: str, secrets: tuple[str, ...] = (), limit: int = BODY_LIMIT_CHARS) -> str:
    """Remove secrets from a server body or message, then truncate it.

    Args:
        text: any text that may echo a credential.
        secrets: exact strings to remove (the configured API key); "" ignored.
        limit: characters kept; a longer text ends with ``…[truncated, N chars]``.

    Returns:
        The text with each secret, ``Bearer <token>`` and ``sk-...`` keys
        replaced by ``[REDACTED]``; redaction happens before truncation so a
        key is never left half-cut.
    """
    for s in secrets:
        if s and len(s) >= 4:
            text = text.replace(s, "[REDACTED]")
    text = _BEARER.sub(r"\1 [REDACTED]", text)
    text = _SK.sub("sk-[REDACTED]", text)
    if len(text) > limit:
        text = f"{text[:limit]}…[truncated, {len(text)} chars]"
    return text


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


def _log_failure(failure: EmbedFailure) -> None:
    logger.warning("embedding failed: %s status=%s endpoint=%s model=%s: %s", failure.code,
                   failure.status_code, failure.endpoint, failure.model, failure.message)


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


# --------------------------------------------------------------------------- protocol


@runtime_checkable
class Embedder(Protocol):
    """What the indexer and search use; built by ``make_embedder``.

    Attributes:
        provider: ``"local" | "ollama" | "openai"``.
        model: the model name vectors are stored under.
        dim: vector dimension; 0 for an HTTP provider until the probe ran
            when ``EMBED_DIM`` is 0.
        endpoint: the route URL (no credentials), None for the local model.
        max_input_chars: longest text ``embed`` sends, in characters.
    """

    provider: str
    model: str
    dim: int
    endpoint: str | None
    max_input_chars: int

    def probe(self) -> float:
        """Embed ``PROBE_TEXT`` and check the dimension; seconds taken. Raises EmbedError."""
        ...

    def embed(self, texts: list[str]) -> np.ndarray:
        """Embed texts: float32, shape (n, dim), L2-normalised. Raises EmbedError."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query: float32, shape (dim,), L2-normalised. Raises EmbedError."""
        ...


class _BaseEmbedder:
    """Shared probe-once, input checks and vector validation."""

    provider = ""
    model = ""
    dim = 0
    endpoint: str | None = None
    max_input_chars = 0

    def __init__(self, *, expected_dim: int, max_input_chars: int):
        self._expected_dim = expected_dim  # 0: take the probe's
        self.dim = expected_dim
        self.max_input_chars = max_input_chars
        self._probe_lock = threading.RLock()
        self._probed = False
        self.probe_seconds: float | None = None

    # -- public ---------------------------------------------------------------
    def probe(self) -> float:
        """Embed ``PROBE_TEXT`` once and check the dimension.

        Returns:
            Seconds the probe took (wall clock, one request for HTTP providers,
            including the model load for ``local`` the first time).

        Raises:
            EmbedError: the endpoint did not answer or refused
                (classified as in ``classify``), or the dimension differs from
                ``EMBED_DIM`` (``embedding-request-rejected``, naming both).
        """
        with self._probe_lock:
            t0 = time.perf_counter()
            vectors = self._embed_raw([PROBE_TEXT], probing=True)
            got = int(vectors.shape[1])
            if self._expected_dim and got != self._expected_dim:
                self._fail(self._failure(
                    "embedding-request-rejected",
                    f"EMBED_DIM is {self._expected_dim} but model {self.model!r} at {self._where()} "
                    f"returns {got}-dimensional vectors; the operator must set EMBED_DIM={got} "
                    f"(or 0 to take the model's) or configure the model that gives {self._expected_dim}",
                    status=None,
                ))
            self.dim = got
            self._probed = True
            self.probe_seconds = time.perf_counter() - t0
            logger.info("embedding probe ok: provider=%s model=%s dim=%d endpoint=%s %.3fs",
                        self.provider, self.model, got, self._where(), self.probe_seconds)
            return self.probe_seconds

    def embed(self, texts: list[str]) -> np.ndarray:
        """Embed a batch of texts (batch-only; runs the probe first, once).

        Args:
            texts: non-empty strings, any count (split into requests of
                ``embed_batch``), each at most ``max_input_chars`` characters.

        Returns:
            float32, shape (n, dim), L2-normalised, row i for texts[i];
            shape (0, dim) for an empty list. All-or-nothing: a failing batch
            raises and no rows come back.

        Raises:
            EmbedError: classified failure (see module docstring); a text over
                the input limit is refused before anything is sent.
            ValueError / TypeError: texts is not a list of non-empty strings (a bug).
        """
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            raise TypeError("embed(texts) takes a list of str")
        if any(t == "" for t in texts):
            raise ValueError("embed(texts): empty strings have no embedding (the chunker never makes them)")
        self._check_lengths(texts)
        if not self._probed:
            with self._probe_lock:  # one probe even when threads race here
                if not self._probed:
                    self.probe()
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._embed_raw(texts, probing=False)

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query: float32, shape (dim,), L2-normalised. Raises as ``embed``."""
        return self.embed([text])[0]

    # -- helpers --------------------------------------------------------------
    def _where(self) -> str:
        return self.endpoint or "in-process"

    def _secrets(self) -> tuple[str, ...]:
        return ()

    def _failure(self, code: ErrorCode, message: str, status: int | None, body: str = "") -> EmbedFailure:
        secrets = self._secrets()
        return EmbedFailure(code=code, message=redact(message, secrets, limit=4 * BODY_LIMIT_CHARS),
                            status_code=status, endpoint=self._where(), model=self.model,
                            body=redact(body, secrets))

    _log_failures = True  # auto-detection probes quietly and logs the final outcome

    def _fail(self, failure: EmbedFailure) -> None:
        if self._log_failures:
            _log_failure(failure)
        raise EmbedError(failure)


    def _check_lengths(self, texts: list[str]) -> None:
        if not self.max_input_chars:
            return
        for i, t in enumerate(texts):
            if len(t) > self.max_input_chars:
                self._fail(self._failure(
                    "embedding-request-rejected",
                    f"text {i} is {len(t)} characters, over the {self.max_input_chars}-character input "
                    f"limit of model {self.model!r} ({self.provider}); nothing was sent. The operator "
                    f"must lower CHUNKNAV_CHUNK_SIZE below {self.max_input_chars}, or raise "
                    f"EMBED_MAX_INPUT_CHARS if the model really accepts more",
                    status=None,
                ))

    def _vectors(self, raw: Any, n: int, status: int | None, body: str) -> np.ndarray:
        """Validate a provider's list of vectors -> float32 (n, dim) L2-normalised, or fail."""
        if not isinstance(raw, list) or not all(isinstance(v, list) and v for v in raw):
            self._fail(self._failure(
                "embedding-unavailable",
                f"{self._where()} answered HTTP {status} without vectors; the server's owner must check it "
                f"(or EMBED_PROVIDER names the wrong wire format)", status, body))
        if len(raw) != n:
            self._fail(self._failure(
                "embedding-unavailable",
                f"{self._where()} returned {len(raw)} vectors for {n} texts (HTTP {status}); nothing stored",
                status, body))
        lengths = {len(v) for v in raw}
        if len(lengths) != 1:
            self._fail(self._failure(
                "embedding-unavailable",
                f"{self._where()} returned vectors of mixed dimensions {sorted(lengths)} (HTTP {status})",
                status, body))
        try:
            arr = np.asarray(raw, dtype=np.float32)
        except (TypeError, ValueError):
            self._fail(self._failure("embedding-unavailable",
                                     f"{self._where()} returned non-numeric vectors (HTTP {status})",
                                     status, body))
        got = arr.shape[1]
        if self.dim and got != self.dim:
            where = (f"EMBED_DIM is {self.dim}" if self._expected_dim
                     else f"the probe returned {self.dim} dimensions")
            self._fail(self._failure(
                "embedding-request-rejected",
                f"{where} but model {self.model!r} at {self._where()} returned {got}-dimensional vectors; "
                f"the operator must set EMBED_DIM={got} or configure the model that gives {self.dim}",
                status, body))
        return self._normalise(arr, status, body)

    def _normalise(self, arr: np.ndarray, status: int | None, body: str) -> np.ndarray:
        if not np.all(np.isfinite(arr)):
            self._fail(self._failure("embedding-unavailable",
                                     f"{self._where()} returned non-finite numbers (NaN/inf) in a vector",
                                     status, body))
        norms = np.linalg.norm(arr, axis=1, keepdims=True)
        if np.any(norms == 0):
            self._fail(self._failure("embedding-unavailable",
                                     f"{self._where()} returned an all-zero vector", status, body))
        return np.ascontiguousarray(arr / norms, dtype=np.float32)

    def _embed_raw(self, texts: list[str], probing: bool) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(model={self.model!r}, dim={self.dim}, "
                f"endpoint={self.endpoint!r})")


# --------------------------------------------------------------------------- local


_MODEL_LOCK = threading.Lock()
_MODEL: Any = None


def _default_cache_dir() -> Path:
    home = Path.home() / ".cache" / "chunknav" / "wordllama"
    try:
        home.mkdir(parents=True, exist_ok=True)
        probe = home / f".w{os.getpid()}"
        probe.touch()
        probe.unlink()
        return home
    except OSError:
        return Path(tempfile.gettempdir()) / f"chunknav-wordllama-{os.getuid() if hasattr(os, 'getuid') else 0}"


def _import_wordllama() -> Any:
    """Import wordllama without its import-time ``logging.basicConfig(level=INFO)``."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        import wordllama  # noqa: F401  (heavy import, done lazily)
        from wordllama import WordLlama
    except ImportError as e:  # pragma: no cover - pinned dependency
        raise ImportError("the local embedding provider needs the 'wordllama' package "
                          "(pip install wordllama==0.4.0.post1)") from e
    finally:
        for h in list(root.handlers):
            if h not in handlers:
                root.removeHandler(h)
        root.setLevel(level)
    return WordLlama


def load_wordllama(cache_dir: str | os.PathLike[str] | None = None) -> Any:
    """Load WordLlama l2_supercat 256-d from the wheel, offline, uncached.

    Copies the wheel's ``tokenizers/l2_supercat_tokenizer_config.json`` into
    ``cache_dir/tokenizer/`` and ``cache_dir/tokenizers/`` (atomically, only
    when missing or of another size) and loads with that ``cache_dir`` and
    ``disable_download=True``; the weights come from the wheel's ``weights/``.
    Takes about 1 s. Most callers want ``LocalEmbedder`` (one shared load).

    Args:
        cache_dir: folder for the tokenizer copies; default
            ``~/.cache/chunknav/wordllama`` (a temp folder if home is read-only).

    Returns:
        A ``wordllama.inference.WordLlamaInference``.

    Raises:
        FileNotFoundError: the wheel lacks the weights or tokenizer (a broken install).
    """
    WordLlama = _import_wordllama()
    import wordllama as pkg

    pkg_dir = Path(pkg.__file__).parent
    config = WordLlama._wordllama.l2_supercat
    src = pkg_dir / "tokenizers" / config.tokenizer_config
    if not src.is_file():
        raise FileNotFoundError(f"wordllama wheel has no {src}: reinstall wordllama==0.4.0.post1")
    cache = Path(cache_dir) if cache_dir is not None else _default_cache_dir()
    for sub in ("tokenizer", "tokenizers"):
        dest = cache / sub / src.name
        if dest.is_file() and dest.stat().st_size == src.stat().st_size:
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(f".{dest.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        shutil.copyfile(src, tmp)
        os.replace(tmp, dest)
    t0 = time.perf_counter()
    model = WordLlama.load("l2_supercat", cache_dir=cache, dim=LOCAL_DIM, disable_download=True)
    logger.info("loaded WordLlama l2_supercat %dd offline in %.2fs (tokenizer cache %s)",
                LOCAL_DIM, time.perf_counter() - t0, cache)
    return model


def _shared_model() -> Any:
    global _MODEL
    if _MODEL is None:
        with _MODEL_LOCK:
            if _MODEL is None:
                _MODEL = load_wordllama()
    return _MODEL


def _length_batches(lengths: list[int], batch: int, budget_chars: int) -> list[list[int]]:
    """Indices sorted by length, cut into batches of <= ``batch`` texts whose
    (count x longest) stays <= ``budget_chars`` (a single text always fits)."""
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    out: list[list[int]] = []
    cur: list[int] = []
    for i in order:
        if cur and (len(cur) >= batch or (len(cur) + 1) * lengths[i] > budget_chars):
            out.append(cur)
            cur = []
        cur.append(i)
    if cur:
        out.append(cur)
    return out


class LocalEmbedder(_BaseEmbedder):
    """WordLlama l2_supercat, 256 dimensions, in process, no network.

    The model is loaded once per process (thread-safe) on the first probe or
    embed, about 1 s; calls are serialised by a lock (a query takes ~0.5 ms).
    Measured here: ~1,100-1,450 windows/s of 1000 characters at batch 16-64.
    """

    provider = "local"

    def __init__(self, *, batch: int = 32, dim: int = 0, max_input_chars: int = 0,
                 budget_chars: int = LOCAL_BATCH_BUDGET_CHARS):
        """
        Args:
            batch: texts per model call (``EMBED_BATCH``); 16-64 is fastest.
            dim: expected dimension (``EMBED_DIM``); 0 means 256. Another value
                fails at the probe (``embedding-request-rejected``).
            max_input_chars: refuse longer texts (characters); 0 = 32,000.
            budget_chars: characters per model call (count x longest text).
        """
        super().__init__(expected_dim=dim, max_input_chars=max_input_chars or LOCAL_MAX_INPUT_CHARS)
        self.model = LOCAL_MODEL
        self.endpoint = None
        self.batch = batch
        self.budget_chars = budget_chars
        self._lock = threading.Lock()
        self.dim = dim or LOCAL_DIM  # a configured dim other than 256 fails at the probe

    def _embed_raw(self, texts: list[str], probing: bool) -> np.ndarray:
        try:
            model = _shared_model()
        except Exception as e:  # a broken install: report as data, not a crash
            self._fail(self._failure(
                "embedding-unavailable",
                f"the local model {LOCAL_MODEL} could not be loaded ({type(e).__name__}: {e}); "
                f"the operator must reinstall wordllama==0.4.0.post1", status=None))
        out = np.empty((len(texts), LOCAL_DIM), dtype=np.float32)
        with self._lock:
            for idx in _length_batches([len(t) for t in texts], self.batch, self.budget_chars):
                out[idx] = model.embed([texts[i] for i in idx], norm=False, batch_size=len(idx))
        return self._normalise(out, None, "")


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


class _HTTPEmbedder(_BaseEmbedder):
    """Shared HTTP client: per-thread ``requests.Session``, batching, retries."""

    route = ""
    wire = ""

    def __init__(self, url: str, model: str, *, api_key: str = "", dim: int = 0, batch: int = 32,
                 timeout_s: float = 30.0, retries: int = 3, max_input_chars: int = 0,
                 backoff_s: float = 0.5, max_backoff_s: float = 8.0, max_retry_after_s: float = 30.0):
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
            raise SettingsError(f"EMBED_MODEL must name the {self.wire} embedding model "
                                f"(e.g. nomic-embed-text, text-embedding-3-small); it is empty")
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise SettingsError(f"EMBED_URL must be an http(s) URL such as {OLLAMA_DEFAULT_URL}, "
                                f"got {_public_url(url) if parts.hostname else url[:40]!r}")
        super().__init__(expected_dim=dim, max_input_chars=max_input_chars or known_input_limit_chars(model))
        self.base_url = self._base(url.rstrip("/"))
        self.model = model
        self.endpoint = _public_url(self.base_url + self.route)
        self._url = self.base_url + self.route
        self._api_key = api_key
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
    def _payload(self, texts: list[str]) -> dict[str, Any]:  # pragma: no cover
        raise NotImplementedError

    def _extract(self, data: Any) -> Any:  # pragma: no cover
        """Parsed 2xx JSON -> list of vectors (or None when absent)."""
        raise NotImplementedError

    # -- the loop ------------------------------------------------------------------
    def _embed_raw(self, texts: list[str], probing: bool) -> np.ndarray:
        parts = [self._request(texts[i:i + self.batch]) for i in range(0, len(texts), self.batch)]
        return np.concatenate(parts, axis=0) if len(parts) > 1 else parts[0]

    def _request(self, texts: list[str]) -> np.ndarray:
        attempt = 0
        while True:
            failure, retryable, retry_after = self._attempt(texts)
            if isinstance(failure, np.ndarray):
                return failure
            if retryable and attempt < self.retries:
                if retry_after is not None and retry_after > self.max_retry_after_s:
                    failure = self._failure(
                        failure.code,
                        f"{failure.message}; the server asked to retry after {retry_after:.0f} s, "
                        f"longer than the {self.max_retry_after_s:.0f} s we wait, so not retried",
                        failure.status_code, failure.body)
                    self._fail(failure)
                delay = retry_after if retry_after is not None else min(
                    self.max_backoff_s, self.backoff_s * (2 ** attempt)) * (0.5 + random.random() / 2)
                attempt += 1
                logger.info("embedding attempt %d/%d failed (%s, status=%s, endpoint=%s); retrying in %.2fs",
                            attempt, self.retries + 1, failure.code, failure.status_code, self.endpoint, delay)
                time.sleep(delay)
                continue
            if retryable and attempt:
                failure = self._failure(failure.code, f"{failure.message} (gave up after {attempt + 1} attempts)",
                                        failure.status_code, failure.body)
            self._fail(failure)

    def _attempt(self, texts: list[str]) -> tuple[Any, bool, float | None]:
        """One POST -> (vectors | EmbedFailure, retryable, retry_after_s)."""
        try:
            resp = self._session().post(self._url, json=self._payload(texts), timeout=self.timeout_s,
                                        proxies=self._proxies)
        except requests.Timeout as e:
            what = "connect" if isinstance(e, requests.ConnectTimeout) else "answer"
            return self._failure(
                "embedding-unavailable",
                f"no {what} from {self.endpoint} within {self.timeout_s:g} s (EMBED_TIMEOUT); the server is "
                f"down or overloaded: its owner must check it, or raise EMBED_TIMEOUT", None), True, None
        except requests.exceptions.SSLError as e:
            return self._failure(
                "embedding-unavailable",
                f"TLS with {self.endpoint} failed ({_short_reason(e)}); retrying cannot help: the operator "
                f"must fix EMBED_URL or the server's certificate", None), False, None
        except requests.ConnectionError as e:
            reason = _short_reason(e)
            return self._failure(
                "embedding-unavailable",
                f"could not connect to {self.endpoint}: {reason}; is the {self.wire} server running at "
                f"EMBED_URL={_public_url(self.base_url)}? (the operator must start it or fix EMBED_URL)",
                None), True, None
        except requests.RequestException as e:
            return self._failure("embedding-unavailable",
                                 f"request to {self.endpoint} failed: {_short_reason(e)}", None), False, None
        status = resp.status_code
        body = resp.text
        if 200 <= status < 300:
            try:
                data = resp.json()
            except ValueError:
                return self._failure(
                    "embedding-unavailable",
                    f"{self.endpoint} answered HTTP {status} with a body that is not JSON; "
                    f"is EMBED_URL a {self.wire} server?", status, body), False, None
            if isinstance(data, dict) and data.get("error"):
                msg, _, _ = _server_error(body)
                return self._failure(
                    "embedding-unavailable",
                    f"{self.endpoint} answered HTTP {status} with an error instead of vectors: {msg}; "
                    f"the server's owner must check it",
                    status, body), False, None
            raw = self._extract(data)
            return self._vectors(raw, len(texts), status, body), False, None
        return self._http_failure(status, body), self._retryable(status, body), _retry_after_s(resp.headers)

    def _retryable(self, status: int, body: str) -> bool:
        if status == 429:
            return not _is_quota(body)
        return status in _RETRY_STATUSES or (status >= 500 and status not in (501, 505))

    def _http_failure(self, status: int, body: str) -> EmbedFailure:
        msg, code_or_type, structured = _server_error(body)
        said = f"HTTP {status}: {msg}" if msg else f"HTTP {status}"
        code = classify(status)
        if status == 401:
            hint = ("no EMBED_API_KEY is set; the operator must set one" if not self._api_key
                    else "the operator must set a valid EMBED_API_KEY for this endpoint")
            text = f"{self.endpoint} refused the credential ({said}); {hint}"
        elif status == 403:
            text = (f"{self.endpoint} refused access for model {self.model!r} ({said}); the operator must use "
                    f"an EMBED_API_KEY allowed to use this model, or fix the server's access rules")
        elif status in (404, 405) and "model" not in msg.lower():
            other = "ollama" if self.wire == "OpenAI" else "openai"
            text = (f"{self.endpoint} has no {self.route} route ({said}): EMBED_URL is wrong, or the server "
                    f"does not speak the {self.wire} wire format or is too old for this route; the operator "
                    f"must fix EMBED_URL, or set EMBED_PROVIDER={other} or auto")
        elif status == 404:
            pull = f" (run `ollama pull {self.model}` on the server)" if self.wire == "Ollama" else ""
            text = (f"model {self.model!r} is not available at {self.endpoint} ({said}); the operator must "
                    f"install it{pull} or fix EMBED_MODEL")
        elif status in (400, 413, 422) and _TOO_LONG.search(msg or ""):
            text = (f"{self.endpoint} refused an input as too long for model {self.model!r} ({said}); "
                    f"our limit was {self.max_input_chars} characters: the operator must lower "
                    f"CHUNKNAV_CHUNK_SIZE or set EMBED_MAX_INPUT_CHARS below it")
        elif status in (400, 422):
            text = (f"{self.endpoint} refused the request for model {self.model!r} ({said}); the operator "
                    f"must check EMBED_MODEL and EMBED_URL")
        elif status == 429 and _is_quota(body):
            text = (f"{self.endpoint}: the account's quota is exhausted ({said}); the account owner must add "
                    f"credit or raise the quota; not retried")
        elif status == 429:
            text = f"{self.endpoint} is rate-limiting us ({said}); retry later or lower EMBED_BATCH"
        elif status >= 500:
            text = (f"{self.endpoint} failed on the server side ({said}); the server's owner must fix it, "
                    f"or retry later")
        else:
            text = f"{self.endpoint} answered {said}"
        return self._failure(code, text, status, body)


def _is_quota(body: str) -> bool:
    _, code, _ = _server_error(body)
    return code == "insufficient_quota" or "insufficient_quota" in body


def _short_reason(e: BaseException) -> str:
    text = str(e)
    for pat in ("Connection refused", "Name or service not known", "No route to host",
                "Temporary failure in name resolution", "Connection reset", "certificate verify failed",
                "Network is unreachable"):
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

    def _payload(self, texts: list[str]) -> dict[str, Any]:
        return {"model": self.model, "input": texts, "truncate": False}

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

    def _payload(self, texts: list[str]) -> dict[str, Any]:
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


def _detect(url: str, settings: Settings, kwargs: dict[str, Any]) -> _HTTPEmbedder:
    """EMBED_PROVIDER=auto: probe /api/embed, then /v1/embeddings; return the one that answered."""
    ollama = OllamaEmbedder(url, settings.embed_model, **kwargs)
    ollama._log_failures = False
    try:
        ollama.probe()
        logger.info("EMBED_PROVIDER=auto: %s speaks the Ollama wire format", _public_url(url))
        return ollama
    except EmbedError as e:
        if _ollama_shaped(e.failure):
            _log_failure(e.failure)
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
            _log_failure(f)
            raise
        failure = EmbedFailure(
            code=f.code, status_code=f.status_code, endpoint=f.endpoint, model=f.model, body=f.body,
            message=(f"EMBED_PROVIDER=auto: neither wire format answered at {_public_url(url)}: "
                     f"/api/embed gave HTTP {first.status_code} and /v1/embeddings HTTP {f.status_code}; "
                     f"the operator must fix EMBED_URL (the server's base URL, e.g. {OLLAMA_DEFAULT_URL})"),
        )
        _log_failure(failure)
        raise EmbedError(failure) from None


def make_embedder(settings: Settings, *, backoff_s: float = 0.5, max_backoff_s: float = 8.0,
                  max_retry_after_s: float = 30.0) -> Embedder | None:
    """Build the configured provider (no network, except ``auto``).

    Args:
        settings: ``embed_provider``, ``embed_url``, ``embed_api_key``,
            ``embed_model``, ``embed_dim``, ``embed_batch``, ``embed_timeout_s``,
            ``embed_retries``, ``embed_max_input_chars`` are read.
        backoff_s, max_backoff_s, max_retry_after_s: retry timing in seconds
            (see ``OllamaEmbedder``); tests pass small values.

    Returns:
        None for ``none``; else an ``Embedder`` whose probe runs before its
        first embed. ``auto`` probes ``/api/embed`` then ``/v1/embeddings`` at
        ``EMBED_URL`` (default Ollama's) and returns the embedder that answered,
        already probed.

    Raises:
        SettingsError: no EMBED_MODEL for ollama/openai/auto, a local model
            other than l2_supercat_256, or an EMBED_URL that is not http(s).
        EmbedError: ``auto`` only: the probe failed (classified).
    """
    p = settings.embed_provider
    if p == "none":
        return None
    if p == "local":
        if settings.embed_model not in ("", LOCAL_MODEL):
            raise SettingsError(f"EMBED_MODEL for EMBED_PROVIDER=local must be {LOCAL_MODEL} (the model "
                                f"that ships in the wordllama wheel), got {settings.embed_model!r}")
        return LocalEmbedder(batch=settings.embed_batch, dim=settings.embed_dim,
                             max_input_chars=settings.embed_max_input_chars)
    if not settings.embed_model:
        raise SettingsError(f"EMBED_MODEL must be set for EMBED_PROVIDER={p} (e.g. nomic-embed-text, "
                            f"text-embedding-3-small); only the local provider has a default model")
    kwargs: dict[str, Any] = dict(
        api_key=settings.embed_api_key, dim=settings.embed_dim, batch=settings.embed_batch,
        timeout_s=settings.embed_timeout_s, retries=settings.embed_retries,
        max_input_chars=settings.embed_max_input_chars, backoff_s=backoff_s,
        max_backoff_s=max_backoff_s, max_retry_after_s=max_retry_after_s,
    )
    if p == "ollama":
        return OllamaEmbedder(settings.embed_url or OLLAMA_DEFAULT_URL, settings.embed_model, **kwargs)
    if p == "openai":
        return OpenAIEmbedder(settings.embed_url or OPENAI_DEFAULT_URL, settings.embed_model, **kwargs)
    if p == "auto":
        return _detect(settings.embed_url or OLLAMA_DEFAULT_URL, settings, kwargs)
    raise SettingsError(f"EMBED_PROVIDER must be local, ollama, openai, auto or none, got {p!r}")
