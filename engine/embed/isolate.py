"""One bad input never blocks the others: embed a list of texts, isolating refused ones.

Owns: ``embed_isolating`` (embed texts in order with any ``Embedder``; a batch
the server refuses because of one of its texts is bisected until that text is
alone, which is then retried cut to the model's limit, or recorded with its
classified failure) and ``TextOutcome`` (what happened to one text). Which
refusals are about a request's texts is decided where the answer is seen
(``EmbedFailure.input_refused``, set in ``engine.embed.base`` / ``.http``);
this module only reads that flag and never reclassifies.

Must not import: ``engine.embed`` (it re-exports this module), any store, or a
face (streamlit, mcp, argparse). Imports ``engine.embed.base`` and ``engine.errors``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from engine.lazy import np  # numpy on first use (engine.lazy)

from engine.embed.base import PROBE_TEXT, EmbedFailure, log_failure, quiet_failures
from engine.errors import EmbedError

__all__ = ["TextOutcome", "embed_isolating", "cut_words", "TRUNCATE_ATTEMPTS"]

logger = logging.getLogger("engine.embed")

#: Cut-and-retry attempts for one refused text (each keeps fewer characters).
TRUNCATE_ATTEMPTS = 4


@dataclass(frozen=True, slots=True)
class TextOutcome:
    """What happened to one text that was not embedded whole.

    Attributes:
        index: position of the text in the ``texts`` given.
        truncated_chars: characters sent when the text was embedded cut to the
            model's limit (its vector is the cut text's); None when it failed.
        failure: the classified refusal of the last attempt when no vector
            could be made (the text has no vector); None when truncated.
    """

    index: int
    truncated_chars: int | None = None
    failure: EmbedFailure | None = None


def embed_isolating(embedder: Any, texts: list[str]) -> tuple[np.ndarray, np.ndarray, list[TextOutcome]]:
    """Embed ``texts`` in one call when possible, isolating the texts a server refuses.

    A refusal whose ``EmbedFailure.input_refused`` is True (a deterministic
    400/413/422, llama.cpp's ``500 input is too large``, a text over the
    client-side limit) splits the batch in halves, recursively, so every other
    text still gets its vector (about 2·log2(n) extra requests per bad text). A
    text alone that is still refused is retried cut to the model's limit
    (``embedder.embed_truncated``: Ollama ``"truncate": true``, else a
    client-side cut guided by the server's token counts, then halving), at most
    ``TRUNCATE_ATTEMPTS`` times; then it is reported with its failure. Texts
    over ``embedder.max_input_chars`` go straight to the cut retry (nothing
    sent whole).

    Args:
        embedder: an ``engine.embed.Embedder`` (already probed or not).
        texts: non-empty strings, in the caller's order.

    Returns:
        (vectors float32 shape (n, dim) L2-normalised, row i for texts[i] (zeros
        where no vector), ok bool shape (n,), outcomes: one ``TextOutcome`` per
        text that was truncated or failed, by index).

    Raises:
        EmbedError: a failure that is not about one text (unreachable,
            credential, unknown model, a wrong dimension, or a refusal that even
            the fixed probe text gets): the caller stops its pass.
    """
    n = len(texts)
    limit = int(getattr(embedder, "max_input_chars", 0) or 0)
    rows: dict[int, np.ndarray] = {}
    outcomes: dict[int, TextOutcome] = {}
    state = {"checked": False}

    def global_check(failure: EmbedFailure) -> None:
        """A refusal that survives cutting: does the server refuse everything? Then stop."""
        if state["checked"]:
            return
        state["checked"] = True
        try:
            embedder.embed([PROBE_TEXT])
        except EmbedError as e:
            logger.warning("the server refuses even the probe text: stopping (%s)", e.failure.message)
            raise EmbedError(failure) from None

    def single(i: int, failure: EmbedFailure | None) -> None:
        text = texts[i]
        keep = len(text)
        last = failure
        for _attempt in range(TRUNCATE_ATTEMPTS):
            if last is not None:
                keep = min(keep - 1, embedder.cut_hint(last, keep)) if keep > 1 else 0
            elif limit and keep > limit:
                keep = limit
            if keep < 1:
                break
            try:
                vec, sent = embedder.embed_truncated(text, keep)
            except EmbedError as e:
                if not e.failure.input_refused:
                    raise
                last = e.failure
                continue
            rows[i] = vec
            outcomes[i] = TextOutcome(i, truncated_chars=int(sent))
            logger.warning(
                "text %d embedded cut (%s): %s", i, getattr(embedder, "model", ""), cut_words(sent, len(text))
            )
            return
        if last is None:  # pragma: no cover - nothing left to cut
            last = EmbedFailure(
                "embedding-request-rejected",
                f"text {i} could not be cut further",
                model=getattr(embedder, "model", ""),
                input_refused=True,
            )
        global_check(last)
        outcomes[i] = TextOutcome(i, failure=last)
        logger.warning("text %d (%d characters) has no vector: %s", i, len(text), last.message)

    def run(idx: list[int]) -> None:
        whole = [i for i in idx if not (limit and len(texts[i]) > limit)]
        for i in idx:
            if limit and len(texts[i]) > limit:
                single(i, None)
        if not whole:
            return
        try:
            out = embedder.embed([texts[i] for i in whole])
        except EmbedError as e:
            if not e.failure.input_refused:
                raise
            if len(whole) == 1:
                single(whole[0], e.failure)
                return
            mid = len(whole) // 2
            run(whole[:mid])
            run(whole[mid:])
            return
        for k, i in enumerate(whole):
            rows[i] = out[k]

    if n:
        try:
            with quiet_failures():  # one line per isolated text below, not one per sub-batch
                run(list(range(n)))
        except EmbedError as e:
            log_failure(e.failure)
            raise
    dim = int(next(iter(rows.values())).shape[0]) if rows else int(getattr(embedder, "dim", 0) or 0)
    vectors = np.zeros((n, dim), dtype=np.float32)
    ok = np.zeros(n, dtype=bool)
    for i, v in rows.items():
        vectors[i] = v
        ok[i] = True
    return vectors, ok, [outcomes[i] for i in sorted(outcomes)]


def cut_words(sent: int, length: int) -> str:
    """What is known of a cut text, for people: ``"chunknav sent the first 1,000 of 1,400
    characters"`` when the cut was made here, ``"the server cut the text; chunknav sent
    1,000 characters"`` when the whole text went and the server cut it where it alone knows."""
    if sent < length:
        return f"chunknav sent the first {sent:,} of {length:,} characters"
    return f"the server cut the text; chunknav sent {sent:,} characters"
