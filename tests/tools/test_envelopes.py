"""Envelope TypedDicts keep NotRequired (no postponed annotations there)."""

import typing

from engine.tools import envelopes as E


def test_notrequired_is_visible():
    assert "count" in E.SearchResult.__optional_keys__
    assert {"searched", "query", "mode", "collections"} <= E.SearchResult.__required_keys__
    assert {"found", "totalChunks"} <= E.ChunkResult.__required_keys__
    assert "text" in E.ChunkResult.__optional_keys__


def test_every_envelope_is_a_typeddict():
    for name in E.__all__:
        t = getattr(E, name)
        assert typing.is_typeddict(t), name
