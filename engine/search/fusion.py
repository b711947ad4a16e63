"""The fusion of a hybrid search: how the keyword and vector lists become one ranking.

Pure: numbers in, numbers out; imports nothing from the engine.
"""

__all__ = ["RRF_K", "FUSION_DEPTH", "VECTOR_WEIGHT_DEFAULT"]

#: Reciprocal-rank-fusion constant (Cormack et al. 2009: score = sum 1/(k + rank)).
RRF_K = 60
#: Candidates each ranked list contributes to a hybrid fusion (at least).
FUSION_DEPTH = 20
#: Weight of the vector list in hybrid fusion when ``vectorWeight`` is not given.
VECTOR_WEIGHT_DEFAULT = 0.5
