"""Embedding providers: text -> float32 vectors, and their failures as data.

Owns: the providers behind ``EMBED_PROVIDER`` (DESIGN.md "Embedding
providers"), the probe that runs before the first real call, batching,
bounded retries, and the one place where HTTP statuses and transport errors
are classified into an ``ErrorCode`` (``classify``) and carried down as an
``EmbedFailure`` inside ``engine.errors.EmbedError``. Later code copies the
failure's fields into envelopes and never reclassifies.

This is the providers' public module: callers import from here only. It holds
the ``Embedder`` protocol and ``make_embedder``; the rest lives in three
modules and is re-exported here: ``engine.embed.base`` (``EmbedFailure``,
``classify``, ``redact``, the shared base class), ``engine.embed.local`` (the
WordLlama provider) and ``engine.embed.http`` (Ollama/OpenAI, retries,
auto-detection). Imports ``engine.config``, ``engine.errors`` and those three;
they never import this module. No face (streamlit, mcp, argparse), no store.

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
      average of its topics. WordLlama's own ``embed`` pads each batch to its
      longest member; we tokenize once without padding and average each
      text's token rows on their own (the same vectors, bit for bit, at the
      cost of the real tokens only), and refuse texts above
      ``LOCAL_MAX_INPUT_CHARS`` (32,000 characters, about 8k tokens;
      ``EMBED_MAX_INPUT_CHARS`` overrides).
    * ``ollama``: ``POST {EMBED_URL}/api/embed`` with ``{"model", "input",
      "truncate": false}`` (Ollama would otherwise cut long input silently);
      only the retry of a refused text sends ``"truncate": true`` (and is
      counted ``truncated``).
    * ``openai``: ``POST {EMBED_URL}/v1/embeddings`` with a bearer key
      (OpenAI, llama.cpp server, TEI, vLLM).
    * ``auto``: probes ``/api/embed`` then ``/v1/embeddings`` and keeps the
      first wire format that answers like its server.

One bad input never blocks the others (``engine.embed.isolate``): a refusal
marked ``input_refused`` (400/413/422, llama.cpp's ``500 input is too large``,
a text over the input limit) splits the batch until the text is alone; it is
then retried cut to the model's limit (Ollama ``"truncate": true``, else a
client-side cut scaled by the server's token counts) or reported with its
failure. A model whose stored vectors have another dimension than the server
answers now is ``embedding-dimension-changed`` (``dimension_changed``, with
``storedDim`` and ``serverDim``).

Failure classification (STYLE.md §3), done where the response is seen:
401/403 -> ``embedding-credential-rejected``; 400/404/422 ->
``embedding-request-rejected``; 5xx, 429, refused connection, timeout ->
``embedding-unavailable``. Retried (bounded): 408, 429 (not ``insufficient_quota``), 5xx but 501/505 and
llama.cpp's ``500 input is too large`` (deterministic; classified
``embedding-request-rejected``), timeouts and refused connections. The wait is
``retry-after-ms`` / ``Retry-After``, else a 429 body's own hint ("Please try
again in 2.812s"), else exponential backoff with jitter; a wait over
``max_retry_after_s`` ends the call. Never retried: 400, 401, 403, 404, 413,
422, an exhausted quota, a malformed 2xx answer. Not sent at all: a text longer
than the model's input limit (``embedding-request-rejected`` naming the limit).
A 2xx answer carrying an ``error``, lacking vectors, or with the wrong count is
``embedding-unavailable``; a dimension other than the configured/probed one is
``embedding-request-rejected`` naming ``EMBED_DIM``. Response bodies are kept
(redacted, at most ``BODY_LIMIT_CHARS``); the API key never appears in a
failure, a message or a log line.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from engine.lazy import np  # numpy on first use (engine.lazy)

from engine.config import Settings
from engine.embed.base import BODY_LIMIT_CHARS, PROBE_TEXT, EmbedFailure, classify, dimension_changed, redact
from engine.embed.http import (
    OLLAMA_DEFAULT_URL,
    OPENAI_DEFAULT_URL,
    OllamaEmbedder,
    OpenAIEmbedder,
    detect,
    known_input_limit_chars,
)
from engine.embed.local import (
    LOCAL_DIM,
    LOCAL_MAX_INPUT_CHARS,
    LOCAL_MODEL,
    LocalEmbedder,
    _shared_model,  # noqa: F401  (re-exported for tests and bench)
    load_wordllama,
)
from engine.embed.isolate import TextOutcome, embed_isolating
from engine.embed.minilm import MINILM_DIM, MINILM_MODEL, MiniLMEmbedder
from engine.errors import SettingsError

__all__ = [
    "EmbedFailure",
    "classify",
    "redact",
    "dimension_changed",
    "embed_isolating",
    "TextOutcome",
    "Embedder",
    "LocalEmbedder",
    "MiniLMEmbedder",
    "LOCAL_MODELS",
    "DEFAULT_LOCAL_MODEL",
    "MINILM_MODEL",
    "MINILM_DIM",
    "make_local_embedder",
    "OllamaEmbedder",
    "OpenAIEmbedder",
    "make_embedder",
    "PROVIDERS",
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


# --------------------------------------------------------------------------- factory


def make_embedder(
    settings: Settings, *, backoff_s: float = 0.5, max_backoff_s: float = 8.0, max_retry_after_s: float = 30.0
) -> Embedder | None:
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
            not in ``LOCAL_MODELS``, or an EMBED_URL that is not http(s).
        EmbedError: ``auto`` only: the probe failed (classified).
    """
    p = settings.embed_provider
    if p == "none":
        return None
    build = PROVIDERS.get(p)
    if build is None:
        raise SettingsError(f"EMBED_PROVIDER must be {', '.join(PROVIDERS)} or none, got {p!r}")
    if p != "local" and not settings.embed_model:
        raise SettingsError(
            f"EMBED_MODEL must be set for EMBED_PROVIDER={p} (e.g. nomic-embed-text, "
            f"text-embedding-3-small); only the local provider has a default model"
        )
    kwargs: dict[str, Any] = dict(
        api_key=settings.embed_api_key,
        dim=settings.embed_dim,
        batch=settings.embed_batch,
        timeout_s=settings.embed_timeout_s,
        retries=settings.embed_retries,
        max_input_chars=settings.embed_max_input_chars,
        backoff_s=backoff_s,
        max_backoff_s=max_backoff_s,
        max_retry_after_s=max_retry_after_s,
    )
    return build(settings, kwargs)


def _local(settings: Settings, _kwargs: dict[str, Any]) -> Embedder:
    """The in-process model named by ``EMBED_MODEL`` (empty: ``DEFAULT_LOCAL_MODEL``)."""
    name = settings.embed_model or DEFAULT_LOCAL_MODEL
    build = LOCAL_MODELS.get(name)
    if build is None:
        raise SettingsError(
            f"EMBED_MODEL for EMBED_PROVIDER=local must be one of {', '.join(LOCAL_MODELS)} (the models "
            f"that ship in the installed wheels), got {settings.embed_model!r}"
        )
    return build(settings)


def _minilm(settings: Settings) -> Embedder:
    return MiniLMEmbedder(
        batch=settings.embed_batch,
        dim=settings.embed_dim,
        max_input_chars=settings.embed_max_input_chars,
        threads=settings.embed_threads,
    )


def _wordllama(settings: Settings) -> Embedder:
    return LocalEmbedder(
        batch=settings.embed_batch, dim=settings.embed_dim, max_input_chars=settings.embed_max_input_chars
    )


#: The local model used when ``EMBED_MODEL`` is empty.
DEFAULT_LOCAL_MODEL = MINILM_MODEL
#: ``EMBED_MODEL`` of the local provider -> the builder of its embedder. The default
#: first; WordLlama is the fast option (~100x less CPU per chunk, weaker recall).
LOCAL_MODELS: dict[str, Callable[[Settings], Embedder]] = {
    MINILM_MODEL: _minilm,
    LOCAL_MODEL: _wordllama,
}


def make_local_embedder(settings: Settings, model: str) -> Embedder | None:
    """The in-process embedder of ``model`` with ``settings``' batch and threads, or None
    when ``model`` is not a local model (the searcher's bridge to stored vectors of a
    model other than the configured one). ``EMBED_DIM`` is not applied: it names the
    configured model's dimension."""
    build = LOCAL_MODELS.get(model)
    if build is None:
        return None
    return build(dataclasses.replace(settings, embed_dim=0, embed_model=model))


def _ollama(settings: Settings, kwargs: dict[str, Any]) -> Embedder:
    return OllamaEmbedder(settings.embed_url or OLLAMA_DEFAULT_URL, settings.embed_model, **kwargs)


def _openai(settings: Settings, kwargs: dict[str, Any]) -> Embedder:
    return OpenAIEmbedder(settings.embed_url or OPENAI_DEFAULT_URL, settings.embed_model, **kwargs)


def _auto(settings: Settings, kwargs: dict[str, Any]) -> Embedder:
    """Probe ``/api/embed`` then ``/v1/embeddings`` at ``EMBED_URL``; the one that answered."""
    return detect(settings.embed_url or OLLAMA_DEFAULT_URL, settings, kwargs)


#: ``EMBED_PROVIDER`` -> the builder of its embedder, given the settings and the HTTP
#: providers' keyword arguments. Adding a provider is one module and one row here.
PROVIDERS: dict[str, Callable[[Settings, dict[str, Any]], Embedder]] = {
    "local": _local,
    "ollama": _ollama,
    "openai": _openai,
    "auto": _auto,
}
