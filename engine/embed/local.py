"""The local embedding provider: WordLlama ``l2_supercat`` at 256 dimensions, in process.

Owns: ``LocalEmbedder``, ``load_wordllama`` (the offline load from the
``wordllama`` wheel, tokenizer copied into a cache folder), the one shared
model per process, length-sorted batching under a character budget, and the
``LOCAL_*`` constants. See ``engine.embed``'s module docstring for what the
model is and how long text is handled.

Must not import: ``engine.embed`` or ``engine.embed.http`` (``engine.embed``
imports this module), ``requests`` or any network client, any store, or a face
(streamlit, mcp, argparse). Imports ``engine.embed.base`` only; ``wordllama`` is
imported lazily, on the first load. Logs under ``engine.embed``.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from engine.embed.base import BaseEmbedder

__all__ = [
    "LocalEmbedder",
    "load_wordllama",
    "LOCAL_MODEL",
    "LOCAL_DIM",
    "LOCAL_MAX_INPUT_CHARS",
    "LOCAL_BATCH_BUDGET_CHARS",
]

# One logger for every provider module, as before the split (operators filter on it).
logger = logging.getLogger("engine.embed")

LOCAL_MODEL = "l2_supercat_256"
LOCAL_DIM = 256
#: Longest text the local model takes, in characters (see ``engine.embed``'s module docstring).
LOCAL_MAX_INPUT_CHARS = 32_000
#: Characters per local batch (texts x longest text) before a new batch starts.
LOCAL_BATCH_BUDGET_CHARS = 256_000


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


class LocalEmbedder(BaseEmbedder):
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

