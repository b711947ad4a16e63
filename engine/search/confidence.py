"""Honest confidence: how well one hit matches its query (``match``), and when none does.

Owns the ``match`` formula, its per-model cosine calibration and the floor under which
a search answers ``confident: false``. A rank and a fused score only order hits; they
say nothing about whether any of them is about the question. ``match`` does:

    match = max(coverage, calibrated cosine)

* ``coverage`` (0..1): the share of the query's content words the chunk holds
  (``engine.search.words.coverage``: case, marks and plural or verb endings folded,
  English function words left out). 1.0: every word the person typed is there.
* calibrated cosine (0..1): the hit's cosine similarity to the query (the vector
  list's, when it returned the hit), mapped linearly from ``lo`` (0: what the model
  gives text unrelated to the question) to ``hi`` (1: what it gives the passages that
  answer questions of the evaluation set), clamped. ``lo`` and ``hi`` depend on the
  model (``COSINE_RANGE``); a model not listed uses ``COSINE_RANGE_DEFAULT``.

A search is ``confident`` when at least one hit reaches ``MATCH_FLOOR``. The floor and
the ranges were chosen on the evaluation set (``tests/data/eval/``: questions whose
answer is in the corpus, and questions no file answers); the figures are in
``docs/decisions/honest-confidence.md``. Pure: imports nothing from the engine.
"""

from __future__ import annotations

__all__ = ["MATCH_FLOOR", "COSINE_RANGE", "COSINE_RANGE_DEFAULT", "match", "calibrated_cosine", "NO_CONFIDENT_MATCH"]

#: A search whose best ``match`` is below this answers ``confident: false``.
MATCH_FLOOR = 0.7
#: Per embedding model: (cosine that means "unrelated", cosine that means "this answers it").
COSINE_RANGE: dict[str, tuple[float, float]] = {
    "l2_supercat_256": (0.34, 0.60),
    "all-MiniLM-L6-v2": (0.36, 0.60),
}
#: The range of a model not in ``COSINE_RANGE``.
COSINE_RANGE_DEFAULT = (0.30, 0.60)
#: The ``message`` of a search that found no confident match.
NO_CONFIDENT_MATCH = (
    "no confident match: no hit holds all the query's words or is close in meaning "
    "(every match is below {floor}); the hits are the nearest there are"
)


def calibrated_cosine(cosine: float | None, model: str | None) -> float:
    """``cosine`` mapped to 0..1 by the model's ``COSINE_RANGE`` (0.0 for None)."""
    if cosine is None:
        return 0.0
    lo, hi = COSINE_RANGE.get(model or "", COSINE_RANGE_DEFAULT)
    return min(1.0, max(0.0, (float(cosine) - lo) / (hi - lo)))


def match(coverage: float | None, cosine: float | None, model: str | None) -> float:
    """One hit's match, 0..1 (see the module docstring), rounded to 3 decimals.

    Args:
        coverage: share of the query's content words the chunk holds, or None.
        cosine: the hit's cosine similarity to the query, or None (keyword only).
        model: the embedding model the cosine came from.
    """
    return round(max(coverage or 0.0, calibrated_cosine(cosine, model)), 3)
