"""The same index gives the same answer, whatever order it was built in.

A corpus with exact duplicate texts in several files and collections (the same
file stored three times: one chunk id at three paths; and the same window text in
files that differ elsewhere: equal vectors under different chunk ids) is indexed
three ways with the real local model:

* straight through: every collection in one run;
* text first, collections in reverse order, one run each with no provider
  (``EMBED_PROVIDER=none``), then an embed pass that stops after one batch (the
  provider fails) and a run that resumes it;
* text first, then every vector added by hand in a shuffled order (the matrix
  rows and chunk rowids in another order again).

The full ordered answers of 20 queries in the keyword, vector and hybrid modes
(``search_chunks``, and ``search``'s one hit per file) must be identical, equal
scores ordered by (collectionPath, filePath, chunkIndex). On Postgres too, when the
test server is there (the last two ways only differ in row order there).
"""

from __future__ import annotations

import random
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from engine.config import Settings
from engine.tools.registry import Engine, call_tool
from tests.conftest import ALLOWED_ROOTS

SIZE = 120  # characters per chunk, no overlap: a 120-character paragraph is one window


def _para(text: str) -> str:
    """``text`` cut or padded to exactly one window."""
    return (text + " " * SIZE)[:SIZE]


WARRANTY = _para("The warranty covers parts and labour for two years from the date of purchase of the turbine.")
SAFETY = _para("Wear gloves and eye protection when you service the blade root; report corrosion at once.")
TOPICS = [
    "Quarterly revenue grew as the wind farm sold more power to the regional grid operator.",
    "The maintenance crew replaced a cracked bearing in the gearbox of turbine seven.",
    "Penguins and walruses share the cold water enclosure at the northern zoo.",
    "Corrosion on the tower flange was measured with an ultrasonic thickness gauge.",
    "The board approved the budget for the coming fiscal year after a long debate.",
    "Rocket skates sold well in spring while anvil sales fell across every region.",
    "Blade inspection drones photographed the leading edge erosion in high detail.",
    "The contract may be terminated with ninety days written notice by either party.",
]

#: collection -> file -> text; WARRANTY alone is one file stored three times (one chunk id),
#: SAFETY opens files that differ after it (equal vectors, different chunk ids).
CORPUS = {
    "Alpha": {
        "warranty.txt": WARRANTY,
        "copy/warranty.txt": WARRANTY,
        "manual.txt": SAFETY + _para(TOPICS[1]) + _para(TOPICS[3]),
        "report.txt": _para(TOPICS[0]) + _para(TOPICS[4]),
    },
    "Beta": {
        "warranty.txt": WARRANTY,
        "service.txt": SAFETY + _para(TOPICS[6]),
        "zoo.txt": _para(TOPICS[2]) + WARRANTY + _para(TOPICS[5]),
    },
    "Gamma/Sub": {
        "safety.txt": SAFETY,
        "terms.txt": _para(TOPICS[7]) + SAFETY + WARRANTY,
        "b.txt": _para(TOPICS[5]) + _para(TOPICS[0]),
        "a.txt": _para(TOPICS[5]) + _para(TOPICS[0]),
    },
}

QUERIES = [
    "warranty parts labour",
    "two years from the date of purchase",
    "gloves eye protection",
    "corrosion blade root",
    "turbine",
    "what does the warranty cover",
    "how do I stay safe during maintenance",
    "revenue grew",
    "rocket skates anvil",
    "penguins",
    "terminate the contract",
    "budget fiscal year",
    "gearbox bearing",
    "ultrasonic thickness",
    "drone inspection of blades",
    "wind farm power grid",
    "service the blade",
    "report",
    "purchase",
    "zoo animals in cold water",
]
MODES = ("keyword", "vector", "hybrid")


def _write(root: Path) -> dict[str, Path]:
    roots = {}
    for coll, files in CORPUS.items():
        base = root / coll.replace("/", "_")
        for name, text in files.items():
            (base / name).parent.mkdir(parents=True, exist_ok=True)
            (base / name).write_text(text, "utf-8")
        roots[coll] = base
    return roots


def _settings(db: str, provider: str, dsn: str = "", batch: int = 32) -> Settings:
    return Settings(
        embed_model="l2_supercat_256",
        db=db,
        dsn=dsn,
        embed_provider=provider,
        embed_batch=batch,
        chunk_size=SIZE,
        chunk_overlap=0,
        allowed_roots=ALLOWED_ROOTS,
    ).validate()


@contextmanager
def _engine(settings: Settings):
    eng = Engine(settings)
    try:
        yield eng
    finally:
        eng.close()


def _straight(where: Path, roots: dict[str, Path], dsn: str = "") -> Settings:
    settings = _settings(str(where / "straight.db"), "local", dsn)
    with _engine(settings) as eng:
        for coll, root in roots.items():
            eng.add_collection(coll, str(root))
        summary = eng.run_index()
        assert summary["embedded"] > 0 and not summary.get("embedError"), summary
    return settings


def _text_first(where: Path, roots: dict[str, Path], name: str, dsn: str = "") -> None:
    """Collections added and indexed in reverse order, one run each, without a provider."""
    with _engine(_settings(str(where / name), "none", dsn)) as eng:
        for coll, root in reversed(list(roots.items())):
            eng.add_collection(coll, str(root))
            assert eng.run_index()["indexed"] > 0


def _resumed(where: Path, roots: dict[str, Path], monkeypatch, dsn: str = "") -> Settings:
    """Text first; then an embed pass that stops when the provider fails after one batch; then
    a run that resumes it."""
    _text_first(where, roots, "resumed.db", dsn)
    settings = _settings(str(where / "resumed.db"), "local", dsn, batch=4)
    from engine.embed.local import LocalEmbedder

    real = LocalEmbedder.embed
    calls = []

    def stops(self, texts):
        calls.append(len(texts))
        if len(calls) > 2:
            raise RuntimeError("the embedding pass was stopped")
        return real(self, texts)

    with monkeypatch.context() as m:
        m.setattr(LocalEmbedder, "embed", stops)
        with _engine(settings) as eng:
            try:
                eng.run_index()
            except RuntimeError:  # a stopped run: what it committed stays
                pass
            model = eng.embedder().model
            assert eng.store.vector_coverage(model)[0] > 0 and eng.store.chunks_missing_vectors(model)
    with _engine(settings) as eng:
        summary = eng.run_index()
        assert not summary.get("embedError"), summary
    return settings


def _shuffled(where: Path, roots: dict[str, Path], dsn: str = "") -> Settings:
    """Text first; then every vector added by hand, one at a time, in a shuffled order."""
    _text_first(where, roots, "shuffled.db", dsn)
    settings = _settings(str(where / "shuffled.db"), "local", dsn)
    with _engine(settings) as eng:
        emb = eng.embedder()
        missing = eng.store.chunks_missing_vectors(emb.model)
        random.Random(29).shuffle(missing)
        for cid, text in missing:
            eng.store.add_vectors(emb.model, [cid], np.asarray(emb.embed([text]), np.float32))
        assert eng.store.chunks_missing_vectors(emb.model) == []
    return settings


def _answers(settings: Settings) -> dict[tuple[str, str, str], list[tuple]]:
    out = {}
    with _engine(settings) as eng:
        for q in QUERIES:
            for mode in MODES:
                for tool in ("search_chunks", "search"):
                    env = call_tool(eng, tool, {"query": q, "scope": "*", "mode": mode, "limit": 12})
                    assert env["searched"], env
                    out[(q, mode, tool)] = [
                        (h["collectionPath"], h["filePath"], h["chunkIndex"], h["score"]) for h in env["hits"]
                    ]
    return out


def _check_tie_order(answers: dict) -> int:
    """Equal scores in key order; returns the number of tied neighbours seen."""
    ties = 0
    for where, hits in answers.items():
        for a, b in zip(hits, hits[1:]):
            assert a[3] >= b[3], where
            if a[3] == b[3]:
                ties += 1
                assert a[:3] < b[:3], (where, a, b)
    return ties


def _compare(builds: dict[str, Settings]) -> None:
    answers = {name: _answers(s) for name, s in builds.items()}
    first, *others = answers
    for name in others:
        for key, want in answers[first].items():
            assert answers[name][key] == want, (name, key)
    tied_modes = set()
    for where, hits in answers[first].items():
        if any(a[3] == b[3] for a, b in zip(hits, hits[1:])):
            tied_modes.add(where[1])
    assert tied_modes >= {"keyword", "vector"}  # the corpus really gives equal scores (fused ones are rarer)
    assert _check_tie_order(answers[first]) > 20


@pytest.mark.slow
def test_the_same_index_built_three_ways_answers_in_the_same_order(tmp_path, monkeypatch):
    roots = _write(tmp_path / "roots")
    builds = {
        "straight": _straight(tmp_path, roots),
        "resumed": _resumed(tmp_path, roots, monkeypatch),
        "shuffled": _shuffled(tmp_path, roots),
    }
    _compare(builds)


def _uri(dsn: str) -> str:
    """A ``key=value`` connection string as the ``postgresql://`` URI the ``dsn`` setting takes."""
    from urllib.parse import quote, urlencode

    from psycopg.conninfo import conninfo_to_dict

    params = {k: str(v) for k, v in conninfo_to_dict(dsn).items()}
    user, dbname = quote(params.pop("user", "")), quote(params.pop("dbname", ""))
    return f"postgresql://{user}@/{dbname}?{urlencode(params)}"


@pytest.mark.slow
@pytest.mark.postgres
def test_the_same_order_on_postgres(tmp_path, monkeypatch):
    pg = pytest.importorskip("tests.fixtures.pg")
    if pg.pg_dsn() is None:
        pytest.skip(pg.pg_skip_reason())
    roots = _write(tmp_path / "roots")
    drops = []
    try:
        builds = {}
        for name in ("straight", "resumed", "shuffled"):
            dsn, drop = pg.fresh_database()
            drops.append(drop)
            dsn = _uri(dsn)
            where = tmp_path / name
            where.mkdir()
            if name == "straight":
                builds[name] = _straight(where, roots, dsn)
            elif name == "resumed":
                builds[name] = _resumed(where, roots, monkeypatch, dsn)
            else:
                builds[name] = _shuffled(where, roots, dsn)
        _compare(builds)
    finally:
        for drop in drops:
            drop()
