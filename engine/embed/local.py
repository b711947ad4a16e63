"""The local embedding provider: WordLlama ``l2_supercat`` at 256 dimensions, in process.

Owns: ``LocalEmbedder``, ``load_wordllama`` (the offline load from the
``wordllama`` wheel, tokenizer copied into a cache folder), the one shared
model per process, unpadded mean pooling (``_mean_pool``: the same vectors
as WordLlama's padded batches, without the padding work), and the
``LOCAL_*`` constants. See ``engine.embed``'s module docstring for what the
model is and how long text is handled.

Must not import: ``engine.embed`` or ``engine.embed.http`` (``engine.embed``
imports this module), ``requests`` or any network client, any store, or a face
(streamlit, mcp, argparse). Imports ``engine.embed.base`` only; ``wordllama`` is
imported lazily, on the first load. Logs under ``engine.embed``.
"""

from __future__ import annotations

import logging
import math
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from engine.lazy import np  # numpy on first use (engine.lazy)

from engine.embed.base import BaseEmbedder

__all__ = [
    "LocalEmbedder",
    "load_wordllama",
    "LOCAL_MODEL",
    "LOCAL_DIM",
    "LOCAL_MAX_INPUT_CHARS",
    "LOCAL_BATCH_BUDGET_CHARS",
    "LOCAL_QUERY_MEMO",
]

# One logger for every provider module, as before the split (operators filter on it).
logger = logging.getLogger("engine.embed")

LOCAL_MODEL = "l2_supercat_256"
LOCAL_DIM = 256
#: Longest text the local model takes, in characters (see ``engine.embed``'s module docstring).
LOCAL_MAX_INPUT_CHARS = 32_000
#: Characters per local batch (texts x longest text) before a new batch starts.
LOCAL_BATCH_BUDGET_CHARS = 256_000
#: Query vectors a ``LocalEmbedder`` keeps, least recently asked dropped first (~1 KB each).
LOCAL_QUERY_MEMO = 256


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
        raise ImportError(
            "the local embedding provider needs the 'wordllama' package (pip install wordllama==0.4.0.post1)"
        ) from e
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
    logger.info(
        "loaded WordLlama l2_supercat %dd offline in %.2fs (tokenizer cache %s)",
        LOCAL_DIM,
        time.perf_counter() - t0,
        cache,
    )
    return model


def _shared_model() -> Any:
    global _MODEL
    if _MODEL is None:
        with _MODEL_LOCK:
            if _MODEL is None:
                _MODEL = load_wordllama()
    return _MODEL


class LocalEmbedder(BaseEmbedder):
    """WordLlama l2_supercat, 256 dimensions, in process, no network.

    The model is loaded once per process (thread-safe) on the first probe or
    embed, about 1 s; calls are serialised by a lock (a query takes ~0.5 ms).
    Texts are tokenized once without padding and each text's token rows are
    averaged on their own (``_mean_pool``), so batch size and text order cost
    nothing: measured here at about 0.6x the CPU time of WordLlama's own padded
    ``embed`` on the same chunks (``bench/embed_pass.py``).
    """

    provider = "local"

    def __init__(
        self,
        *,
        batch: int = 32,
        dim: int = 0,
        max_input_chars: int = 0,
        budget_chars: int = LOCAL_BATCH_BUDGET_CHARS,
        query_memo: int = LOCAL_QUERY_MEMO,
    ):
        """
        Args:
            batch: texts per model call (``EMBED_BATCH``); 16-64 is fastest.
            dim: expected dimension (``EMBED_DIM``); 0 means 256. Another value
                fails at the probe (``embedding-request-rejected``).
            max_input_chars: refuse longer texts (characters); 0 = 32,000.
            budget_chars: accepted and unused: the unpadded pooling needs no
                budget (memory is one text's tokens at a time).
            query_memo: query vectors kept by ``embed_query`` (0: none kept).
        """
        super().__init__(expected_dim=dim, max_input_chars=max_input_chars or LOCAL_MAX_INPUT_CHARS)
        self.model = LOCAL_MODEL
        self.endpoint = None
        self.batch = batch
        self.budget_chars = budget_chars
        self._lock = threading.Lock()
        self.dim = dim or LOCAL_DIM  # a configured dim other than 256 fails at the probe
        self.query_memo = query_memo
        self._queries: dict[str, np.ndarray] = {}  # embed_query's answers, least recently asked first

    def _embed_raw(self, texts: list[str], probing: bool) -> np.ndarray:
        try:
            model = _shared_model()
            tokenizer = _unpadded_tokenizer(model)
        except Exception as e:  # a broken install: report as data, not a crash
            self._fail(
                self._failure(
                    "embedding-unavailable",
                    f"the local model {LOCAL_MODEL} could not be loaded ({type(e).__name__}: {e}); "
                    f"the operator must reinstall wordllama==0.4.0.post1",
                    status=None,
                )
            )
        with self._lock:
            out = _mean_pool(model.embedding, tokenizer, texts)
        return self._normalise(out, None, "")

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query: float32, shape (dim,), L2-normalised. Raises as ``embed``.

        Once the model is loaded and probed, one plain query (a non-empty ``str``
        within the input limit) takes a short path: one ``encode`` instead of a
        batch of one, the token rows summed as ``_mean_pool`` sums them, and the
        norm of the one row taken as ``_normalise`` takes it of each row (the
        same float32 bits, tested): ~0.1 instead of ~0.2 ms right after a vector
        scan has flushed the caches. Anything else (no model or probe yet, no
        token, a zero or non-finite vector) goes through ``embed([text])``,
        which checks, fails and answers exactly as before.

        The short path keeps its last ``query_memo`` answers by text (the model
        is one fixed table, so a text's vector never changes): a question asked
        again (the explorer runs its search again on every click; an agent
        repeats or compares modes) costs a dict lookup and a copy, ~2 us instead
        of ~0.15 ms cold. Each call returns its own array.
        """
        model, tokenizer = _MODEL, _TOKENIZER
        if (
            model is None
            or tokenizer is None
            or not self._probed
            or type(text) is not str
            or not text
            or (self.max_input_chars and len(text) > self.max_input_chars)
        ):
            return super().embed_query(text)
        queries = self._queries
        kept = queries.pop(text, None)
        if kept is not None:
            queries[text] = kept  # now the most recently asked
            return kept.copy()
        table = model.embedding
        with self._lock:
            ids = tokenizer.encode(text, add_special_tokens=False).ids
            if ids:  # _mean_pool's row: ids clipped to the table (take's "clip"), summed in float32
                # (ndarray.sum is this add.reduce), / count
                row = np.add.reduce(np.take(table, ids, axis=0, mode="clip"), axis=0, dtype=np.float32) / np.float32(
                    len(ids)
                )
        if not ids:
            return super().embed_query(text)
        norm = np.sqrt(np.add.reduce(row * row))  # np.linalg.norm(axis=1)'s sum for one row (_normalise)
        if not 0.0 < float(norm) < math.inf:  # zero, NaN or inf: embed() words the failure
            return super().embed_query(text)
        vector = row / norm
        if self.query_memo > 0:
            while len(queries) >= self.query_memo:
                try:
                    del queries[next(iter(queries))]  # the least recently asked
                except (KeyError, RuntimeError, StopIteration):  # another thread moved it first
                    break
            queries[text] = vector.copy()
        return vector


_TOKENIZER: Any = None


def _unpadded_tokenizer(model: Any) -> Any:
    """A copy of the model's tokenizer with padding off (the shared one pads every
    batch to its longest text), made once per process."""
    global _TOKENIZER
    if _TOKENIZER is None:
        with _MODEL_LOCK:
            if _TOKENIZER is None:
                from tokenizers import Tokenizer

                tok = Tokenizer.from_str(model.tokenizer.to_str())
                tok.no_padding()
                tok.no_truncation()
                _TOKENIZER = tok
    return _TOKENIZER


def _mean_pool(table: np.ndarray, tokenizer: Any, texts: list[str]) -> np.ndarray:
    """WordLlama's embedding without padding: the mean of each text's token rows.

    Same numbers as ``WordLlamaInference.embed(texts, norm=False)`` (which pads
    each batch to its longest text and masks the padding out) up to float32
    rounding, at the cost of the real tokens only: the texts are tokenized once
    (no padding), token ids clipped to the table as WordLlama does, and each
    text's rows gathered and summed on their own (``np.take`` + ``sum(axis=0)``
    measured 15x faster here than one ``np.add.reduceat`` over all of them).

    Args:
        table: the model's embedding table, float32 shape (vocab, 256).
        tokenizer: an unpadded ``tokenizers.Tokenizer`` (``_unpadded_tokenizer``).
        texts: strings in order.

    Returns:
        float32 shape (len(texts), 256), not normalised; a text without tokens
        gives a zero row.
    """
    out = np.zeros((len(texts), table.shape[1]), dtype=np.float32)
    top = table.shape[0] - 1
    for i, enc in enumerate(tokenizer.encode_batch(texts, is_pretokenized=False, add_special_tokens=False)):
        ids = np.asarray(enc.ids, dtype=np.int64)
        if ids.size:
            np.clip(ids, 0, top, out=ids)
            out[i] = np.take(table, ids, axis=0).sum(axis=0, dtype=np.float32) / np.float32(ids.size)
    return out
