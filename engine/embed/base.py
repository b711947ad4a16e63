"""Shared ground of the embedding providers: failures as data, and the base class.

Owns: ``EmbedFailure`` (one classified provider outcome), ``classify`` (HTTP
status -> ``ErrorCode``, STYLE.md §3), ``redact`` (secrets out of bodies and
messages), ``PROBE_TEXT``, ``BODY_LIMIT_CHARS``, the one warning logged per
failed call (``log_failure``), and ``BaseEmbedder``: probe-once, input-length
checks and vector validation shared by the local and the HTTP providers.

Must not import: ``engine.embed``, ``engine.embed.local`` or
``engine.embed.http`` (they import this module, not the reverse), any store,
or a face (streamlit, mcp, argparse). Imports ``engine.errors`` and
``engine.secrets`` only. Logs
under ``engine.embed``, the providers' one logger name. The public entry is
``engine.embed``, which re-exports what callers use.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any, Iterator

from engine.lazy import np  # numpy on first use (engine.lazy)

from engine.errors import EmbedError, ErrorCode
from engine.secrets import redact as _redact

__all__ = [
    "length_batches",
    "EmbedFailure",
    "classify",
    "redact",
    "log_failure",
    "BaseEmbedder",
    "dimension_changed",
    "quiet_failures",
    "PROBE_TEXT",
    "BODY_LIMIT_CHARS",
]

# One logger for every provider module, as before the split (operators filter on it).
logger = logging.getLogger("engine.embed")

#: The fixed text the probe embeds before the first real call.
PROBE_TEXT = "chunknav probe: the quick brown fox jumps over the lazy dog"
#: A response body is kept up to this many characters (after redaction).
BODY_LIMIT_CHARS = 2048


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
        input_refused: True when the refusal is about this request's texts
            (a deterministic 400/413/422, llama.cpp's ``500 input is too
            large``, a text over the client-side input limit): the embed pass
            splits the batch to find the offending text instead of stopping.
        stored_dim, server_dim: for ``embedding-dimension-changed``: the
            dimension ``model`` had before (its vectors stored in the index,
            or the server's earlier answers in this process) and the one the
            server answers now (None otherwise).
        who_fixes: who can act, where the code's ``WHO_FIXES`` line says otherwise for this
            case (an exhausted quota: the account owner, not "retry later"); "" uses it.
    """

    code: ErrorCode
    message: str
    status_code: int | None = None
    endpoint: str = ""
    model: str = ""
    body: str = ""
    input_refused: bool = False
    stored_dim: int | None = None
    server_dim: int | None = None
    who_fixes: str = ""

    def to_fields(self) -> dict[str, Any]:
        """Envelope fields (``envelopes.FailureFields``): ``error``, ``message``,
        ``endpoint``, ``model``, ``statusCode``, ``responseBody``, plus
        ``storedDim`` / ``serverDim`` (integers) for a changed dimension and ``whoFixes``
        where it differs from the code's ``WHO_FIXES``."""
        out: dict[str, Any] = {
            "error": self.code,
            "message": self.message,
            "endpoint": self.endpoint,
            "model": self.model,
            "statusCode": self.status_code,
            "responseBody": self.body,
        }
        if self.stored_dim is not None:
            out["storedDim"] = int(self.stored_dim)
        if self.server_dim is not None:
            out["serverDim"] = int(self.server_dim)
        if self.who_fixes:
            out["whoFixes"] = self.who_fixes
        return out


def dimension_changed(model: str, endpoint: str, stored_dim: int, server_dim: int) -> EmbedFailure:
    """The ``embedding-dimension-changed`` failure: ``model`` has ``stored_dim``-d
    vectors in the index but the provider at ``endpoint`` now answers
    ``server_dim``-d ones (the model behind the name changed). Stored vectors
    are kept; the operator must restore the model or index under a new name."""
    return EmbedFailure(
        code="embedding-dimension-changed",
        message=(
            f"model {model!r} at {endpoint or 'in-process'} now returns {server_dim}-dimensional vectors, "
            f"but the {stored_dim}-dimensional vectors already stored for it were made by another model "
            f"behind the same name; nothing was written and the stored vectors are kept. The operator "
            f"must restore the model that gives {stored_dim} dimensions, or set EMBED_MODEL to a new "
            f"name for the new model (``ollama cp`` gives it one) and re-index"
        ),
        endpoint=endpoint or "in-process",
        model=model,
        stored_dim=int(stored_dim),
        server_dim=int(server_dim),
    )


def classify(status: int | None) -> ErrorCode:
    """One provider outcome -> code. status None: no HTTP answer (timeout, refused)."""
    if status in (401, 403):
        return "embedding-credential-rejected"
    if status in (400, 404, 422):
        return "embedding-request-rejected"
    return "embedding-unavailable"  # 5xx, 429, None (DESIGN table)


def redact(text: str, secrets: tuple[str, ...] = (), limit: int = BODY_LIMIT_CHARS) -> str:
    """Remove secrets from a server body or message, then truncate it.

    The redaction itself is ``engine.secrets.redact`` (the one function every
    face uses: every configured secret in raw, JSON-escaped, URL-encoded and
    base64 forms, ``Bearer``/``Basic`` credentials, ``sk-...`` keys); this
    wrapper adds the truncation bodies get.

    Args:
        text: any text that may echo a credential.
        secrets: further exact strings to remove (registered process-wide); "" ignored.
        limit: characters kept; a longer text ends with ``…[truncated, N chars]``.

    Returns:
        The redacted text; redaction happens before truncation so a key is
        never left half-cut.
    """
    text = _redact(text, secrets, generic=True)  # a provider body: every credential shape goes
    if len(text) > limit:
        text = f"{text[:limit]}…[truncated, {len(text)} chars]"
    return text


def log_failure(failure: EmbedFailure) -> None:
    """Log one failed provider call once, as a warning (never the API key: fields are redacted)."""
    logger.warning(
        "embedding failed: %s status=%s endpoint=%s model=%s: %s",
        failure.code,
        failure.status_code,
        failure.endpoint,
        failure.model,
        failure.message,
    )


#: Per-thread switch: while ``quiet_failures()`` is active, failed calls are not
#: logged one by one (the batch isolation logs one line per text instead).
_QUIET = threading.local()


@contextlib.contextmanager
def quiet_failures() -> Iterator[None]:
    """Within the block, this thread's failed provider calls raise without their own log line."""
    before = getattr(_QUIET, "on", False)
    _QUIET.on = True
    try:
        yield
    finally:
        _QUIET.on = before


class BaseEmbedder:
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
                self._fail(
                    self._failure(
                        "embedding-request-rejected",
                        f"EMBED_DIM is {self._expected_dim} but model {self.model!r} at {self._where()} "
                        f"returns {got}-dimensional vectors; the operator must set EMBED_DIM={got} "
                        f"(or 0 to take the model's) or configure the model that gives {self._expected_dim}",
                        status=None,
                    )
                )
            self.dim = got
            self._probed = True
            self.probe_seconds = time.perf_counter() - t0
            logger.info(
                "embedding probe ok: provider=%s model=%s dim=%d endpoint=%s %.3fs",
                self.provider,
                self.model,
                got,
                self._where(),
                self.probe_seconds,
            )
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

    def embed_truncated(self, text: str, limit_chars: int) -> tuple[np.ndarray, int]:
        """Embed one text cut to the model's input limit (the retry of a refused text).

        The base class cuts client-side: the first ``min(limit_chars,
        max_input_chars)`` characters are sent (a cut never splits a
        surrogate pair). The Ollama provider overrides this and sends the whole
        text with ``"truncate": true`` (the server cuts at its context length).

        Args:
            text: the refused text, non-empty.
            limit_chars: characters to keep, > 0 (the caller's estimate of the
                limit, from the server's message or a halving).

        Returns:
            (vector float32 shape (dim,) L2-normalised, characters sent).

        Raises:
            EmbedError: refused again or any other failure (classified).
        """
        keep = max(1, min(int(limit_chars), self.max_input_chars or len(text), len(text)))
        cut = text[:keep]
        return self.embed([cut])[0], len(cut)

    def cut_hint(self, failure: EmbedFailure, n_chars: int) -> int:
        """Characters to keep when retrying a refused text of ``n_chars`` characters.

        The base class keeps ``max_input_chars`` (or half the text when that
        would not cut); the HTTP providers read the server's token counts
        ("maximum context length is 8192 tokens, however you requested 9314",
        llama.cpp's "input (992 tokens) ... (current batch size: 512)") first.
        """
        if self.max_input_chars and self.max_input_chars < n_chars:
            return self.max_input_chars
        return max(1, n_chars // 2)

    # -- helpers --------------------------------------------------------------
    def _where(self) -> str:
        return self.endpoint or "in-process"

    def _secrets(self) -> tuple[str, ...]:
        return ()

    def _failure(
        self, code: ErrorCode, message: str, status: int | None, body: str = "", input_refused: bool = False
    ) -> EmbedFailure:
        secrets = self._secrets()
        return EmbedFailure(
            code=code,
            message=redact(message, secrets, limit=4 * BODY_LIMIT_CHARS),
            status_code=status,
            endpoint=self._where(),
            model=self.model,
            body=redact(body, secrets),
            input_refused=input_refused,
        )

    _log_failures = True  # auto-detection probes quietly and logs the final outcome

    def _fail(self, failure: EmbedFailure) -> None:
        if self._log_failures and not getattr(_QUIET, "on", False):
            log_failure(failure)
        raise EmbedError(failure)

    def _check_lengths(self, texts: list[str]) -> None:
        if not self.max_input_chars:
            return
        for i, t in enumerate(texts):
            if len(t) > self.max_input_chars:
                self._fail(
                    self._failure(
                        "embedding-request-rejected",
                        f"text {i} is {len(t)} characters, over the {self.max_input_chars}-character input "
                        f"limit of model {self.model!r} ({self.provider}); nothing was sent. The operator "
                        f"must lower CHUNKNAV_CHUNK_SIZE below {self.max_input_chars}, or raise "
                        f"EMBED_MAX_INPUT_CHARS if the model really accepts more",
                        status=None,
                        input_refused=True,
                    )
                )

    def _vectors(self, raw: Any, n: int, status: int | None, body: str) -> np.ndarray:
        """Validate a provider's list of vectors -> float32 (n, dim) L2-normalised, or fail."""
        if not isinstance(raw, list) or not all(isinstance(v, list) and v for v in raw):
            self._fail(
                self._failure(
                    "embedding-unavailable",
                    f"{self._where()} answered HTTP {status} without vectors; the server's owner must check it "
                    f"(or EMBED_PROVIDER names the wrong wire format)",
                    status,
                    body,
                )
            )
        if len(raw) != n:
            self._fail(
                self._failure(
                    "embedding-unavailable",
                    f"{self._where()} returned {len(raw)} vectors for {n} texts (HTTP {status}); nothing stored",
                    status,
                    body,
                )
            )
        lengths = {len(v) for v in raw}
        if len(lengths) != 1:
            self._fail(
                self._failure(
                    "embedding-unavailable",
                    f"{self._where()} returned vectors of mixed dimensions {sorted(lengths)} (HTTP {status})",
                    status,
                    body,
                )
            )
        try:
            arr = np.asarray(raw, dtype=np.float32)
        except (TypeError, ValueError):
            self._fail(
                self._failure(
                    "embedding-unavailable",
                    f"{self._where()} returned non-numeric vectors (HTTP {status})",
                    status,
                    body,
                )
            )
        got = arr.shape[1]
        if self.dim and got != self.dim and not self._expected_dim:
            # no EMBED_DIM: this process saw self.dim before, the server now answers got
            self._fail(
                dataclasses.replace(
                    self._failure(
                        "embedding-dimension-changed",
                        f"model {self.model!r} at {self._where()} now returns {got}-dimensional vectors, but it "
                        f"returned {self.dim} dimensions earlier (another model behind the same name); nothing is "
                        f"written and stored vectors are kept. The operator must restore the model that gives "
                        f"{self.dim} dimensions, or give the new model a new EMBED_MODEL name and re-index",
                        status,
                        body,
                    ),
                    stored_dim=int(self.dim),
                    server_dim=int(got),
                )
            )
        if self.dim and got != self.dim:
            where = f"EMBED_DIM is {self.dim}" if self._expected_dim else f"the probe returned {self.dim} dimensions"
            self._fail(
                self._failure(
                    "embedding-request-rejected",
                    f"{where} but model {self.model!r} at {self._where()} returned {got}-dimensional vectors; "
                    f"the operator must set EMBED_DIM={got} or configure the model that gives {self.dim}",
                    status,
                    body,
                )
            )
        return self._normalise(arr, status, body)

    def _normalise(self, arr: np.ndarray, status: int | None, body: str) -> np.ndarray:
        if not np.all(np.isfinite(arr)):
            self._fail(
                self._failure(
                    "embedding-unavailable",
                    f"{self._where()} returned non-finite numbers (NaN/inf) in a vector",
                    status,
                    body,
                )
            )
        norms = np.linalg.norm(arr, axis=1, keepdims=True)
        if np.any(norms == 0):
            self._fail(
                self._failure("embedding-unavailable", f"{self._where()} returned an all-zero vector", status, body)
            )
        return np.ascontiguousarray(arr / norms, dtype=np.float32)

    def _embed_raw(self, texts: list[str], probing: bool) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, dim={self.dim}, endpoint={self.endpoint!r})"


def length_batches(lengths: list[int], batch: int, budget: int) -> list[list[int]]:
    """Indices sorted by length, cut into batches of <= ``batch`` texts whose
    (count x longest) stays <= ``budget`` (a single text always fits): each batch is
    padded to its own longest text, so sorting keeps the padding small. Lengths are
    in whatever unit the model pads in (characters, tokens)."""
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    out: list[list[int]] = []
    cur: list[int] = []
    for i in order:
        if cur and (len(cur) >= batch or (len(cur) + 1) * lengths[i] > budget):
            out.append(cur)
            cur = []
        cur.append(i)
    if cur:
        out.append(cur)
    return out
