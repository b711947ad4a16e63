"""The SQLite store's keyword indexes: FTS5 schema upkeep and BM25 search.

Owns: the two FTS5 indexes over ``chunks.chunk_text`` (``chunks_fts`` with the
``porter`` stemmer over ``unicode61``, fed each chunk's keyword text:
``coalesce(search_text, chunk_text)``, ``search_text`` set only where
``engine.store.fts.keyword_text`` folds something, and its delete/update triggers; ``chunks_tri`` with the ``trigram``
tokenizer over the chunks holding CJK characters, kept in step by
conditional triggers), their creation, and ``search_keyword`` (all terms, then any term; the any-term pass cut to the
query's rarest terms, and answered from per-term BM25 lists when they are kept:
``engine.store.sqlite.term_scores``; equal scores in (collection path, file path, chunk
index) order). ``engine.store.sqlite.store.SqliteStore`` holds a
``KeywordIndex`` built on its connections; query text comes from ``engine.store.sqlite.rows.fts_queries``.
Imports ``engine.values``, ``engine.store.fts``, ``engine.store.sqlite.rows`` and
``engine.store.sqlite.term_scores``; never a face.
"""

from __future__ import annotations

import sqlite3
from typing import Any, Callable, ContextManager, Iterable

from engine.values import KeywordHit
from engine.store.fts import CJK_GLOB, KEYWORD_TEXT_VERSION, keyword_text
from engine.store.sqlite.rows import CHUNK_COLUMNS, chunk_of, fts_queries
from engine.store.sqlite.term_scores import any_term_refs, document_counts, keyword_state

__all__ = [
    "KeywordIndex",
    "FTS_TOKENIZE",
    "KEYWORD_TEXT_SQL",
    "FTS_TRIGGERS",
    "KEYWORD_ANY_TERMS",
    "KEYWORD_COMMON_SHARE",
    "ensure_fts",
    "fts_is_current",
    "keyword_text_is_current",
    "refresh_keyword_text",
    "search_keyword",
    "keyword_refs",
    "chunk_rows",
    "selective_any",
    "FTS_MAX_SEGMENTS",
    "fts_segments",
    "tidy_fts",
]

#: The any-term keyword pass keeps at most this many of the query's rarest terms
#: (docs/decisions/keyword-any-terms.md).
KEYWORD_ANY_TERMS = 6
#: ... and leaves out terms in more than this share of all chunks while rarer terms remain
#: (docs/decisions/keyword-any-terms.md).
KEYWORD_COMMON_SHARE = 0.02
#: Tokenizer of ``chunks_fts``.
FTS_TOKENIZE = "porter unicode61 remove_diacritics 2"


#: The keyword index objects of a store's file (``ensure_fts`` makes the missing ones).
_FTS_OBJECTS = ("chunks_fts", "chunks_tri", "chunks_tri_ad", "chunks_tri_aud", "chunks_tri_aui")

#: What ``chunks_fts`` indexes of a ``chunks`` row (``{r}``: ``old``, ``new`` or a table alias):
#: its keyword text when one was stored (``engine.store.fts.keyword_text``), else its text.
KEYWORD_TEXT_SQL = "coalesce({r}.search_text, {r}.chunk_text)"
_OLD = KEYWORD_TEXT_SQL.format(r="old")
#: The triggers keeping ``chunks_fts`` in step with deletes and updates of ``chunks``: name -> SQL.
#: External content: a 'delete' must name the text that was indexed, hence the keyword text.
FTS_TRIGGERS = {
    "chunks_ad": "CREATE TRIGGER chunks_ad AFTER DELETE ON chunks BEGIN "
    f"INSERT INTO chunks_fts (chunks_fts, rowid, chunk_text) VALUES('delete', old.rowid, {_OLD}); END",
    "chunks_au": "CREATE TRIGGER chunks_au AFTER UPDATE ON chunks BEGIN "
    f"INSERT INTO chunks_fts (chunks_fts, rowid, chunk_text) VALUES('delete', old.rowid, {_OLD}); "
    f"INSERT INTO chunks_fts (rowid, chunk_text) VALUES (new.rowid, {KEYWORD_TEXT_SQL.format(r='new')}); END",
}


def fts_is_current(conn: sqlite3.Connection) -> bool:
    """True when every keyword index object exists (a read, no lock)."""
    marks = ", ".join("?" * len(_FTS_OBJECTS))
    found = conn.execute(f"SELECT count(*) FROM sqlite_master WHERE name IN ({marks})", _FTS_OBJECTS).fetchone()[0]
    return int(found) == len(_FTS_OBJECTS)


def keyword_text_is_current(conn: sqlite3.Connection) -> bool:
    """True when ``chunks`` has its ``search_text`` column, the ``chunks_fts`` triggers
    index it (``FTS_TRIGGERS``) and ``meta`` records the keyword text of every row as
    written under ``KEYWORD_TEXT_VERSION`` (a read, no lock)."""
    version = conn.execute("SELECT value FROM meta WHERE key = 'keyword_text'").fetchone()
    if version is None or str(version[0]) != str(KEYWORD_TEXT_VERSION):
        return False
    if not conn.execute("SELECT 1 FROM pragma_table_info('chunks') WHERE name = 'search_text'").fetchone():
        return False
    triggers = dict(
        conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND name IN ('chunks_ad', 'chunks_au')"
        )
    )
    return all(triggers.get(name) == ddl for name, ddl in FTS_TRIGGERS.items())


def ensure_fts(conn: sqlite3.Connection) -> None:
    """Create the keyword indexes that are missing, filled from ``chunks``.

    ``chunks_fts`` uses the ``porter`` stemmer over ``unicode61`` (``FTS_TOKENIZE``)
    and indexes each row's keyword text (``KEYWORD_TEXT_SQL``); a file without the
    ``search_text`` column gains it (NULL in every row: the text indexed so far is the
    chunk text, so the index stays exact), and its ``chunks_ad`` / ``chunks_au``
    triggers are replaced by ``FTS_TRIGGERS``. ``chunks_tri`` is a ``trigram`` FTS5
    index over the chunks holding a CJK character, kept in step by conditional
    triggers. When ``meta`` records no or another ``KEYWORD_TEXT_VERSION``, the
    keyword text of every stored chunk is brought up to it (``refresh_keyword_text``).
    Idempotent; run inside the caller's write transaction.
    """
    if not conn.execute("SELECT 1 FROM pragma_table_info('chunks') WHERE name = 'search_text'").fetchone():
        conn.execute("ALTER TABLE chunks ADD COLUMN search_text TEXT")
    for name, ddl in FTS_TRIGGERS.items():
        row = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = ?", (name,)).fetchone()
        if row is None or row[0] != ddl:
            conn.execute(f"DROP TRIGGER IF EXISTS {name}")
            conn.execute(ddl)
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'chunks_fts'").fetchone() is None:
        conn.execute(
            f"CREATE VIRTUAL TABLE chunks_fts USING FTS5 (chunk_text, tokenize='{FTS_TOKENIZE}', content=\"chunks\")"
        )
        conn.execute(
            f"INSERT INTO chunks_fts (rowid, chunk_text) SELECT rowid, {KEYWORD_TEXT_SQL.format(r='chunks')} FROM chunks"
        )
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'chunks_tri'").fetchone() is None:
        conn.execute("CREATE VIRTUAL TABLE chunks_tri USING FTS5 (chunk_text, tokenize='trigram', content=\"chunks\")")
        conn.execute(
            "INSERT INTO chunks_tri (rowid, chunk_text) SELECT rowid, chunk_text FROM chunks WHERE chunk_text GLOB ?",
            (CJK_GLOB,),
        )
    version = conn.execute("SELECT value FROM meta WHERE key = 'keyword_text'").fetchone()
    if version is None or str(version[0]) != str(KEYWORD_TEXT_VERSION):
        refresh_keyword_text(conn)
    # Only CJK chunks are in chunks_tri: a 'delete' of a row never added would corrupt it.
    cjk_old = f"old.chunk_text GLOB '{CJK_GLOB}'"
    cjk_new = f"new.chunk_text GLOB '{CJK_GLOB}'"
    conn.execute(
        f"CREATE TRIGGER IF NOT EXISTS chunks_tri_ad AFTER DELETE ON chunks WHEN {cjk_old} BEGIN "
        "INSERT INTO chunks_tri (chunks_tri, rowid, chunk_text) "
        "VALUES('delete', old.rowid, old.chunk_text); END"
    )
    conn.execute(
        f"CREATE TRIGGER IF NOT EXISTS chunks_tri_aud AFTER UPDATE ON chunks WHEN {cjk_old} BEGIN "
        "INSERT INTO chunks_tri (chunks_tri, rowid, chunk_text) "
        "VALUES('delete', old.rowid, old.chunk_text); END"
    )
    conn.execute(
        f"CREATE TRIGGER IF NOT EXISTS chunks_tri_aui AFTER UPDATE ON chunks WHEN {cjk_new} BEGIN "
        "INSERT INTO chunks_tri (rowid, chunk_text) VALUES (new.rowid, new.chunk_text); END"
    )


def refresh_keyword_text(conn: sqlite3.Connection) -> int:
    """Bring every stored chunk's ``search_text`` to the current rules
    (``engine.store.fts.keyword_text`` over its document's stored text) and record
    ``KEYWORD_TEXT_VERSION`` in ``meta``; no re-extraction, no re-embedding.

    Each changed row is one ``UPDATE`` of ``search_text``: the ``chunks_au`` trigger
    takes the old keyword text out of ``chunks_fts`` and puts the new one in. A
    document with nothing to fold costs one scan of its text. Run inside the caller's
    write transaction (``ensure_fts``, at the first open with write access).

    Returns:
        The number of chunk rows whose keyword text changed (``chunks_gen`` is bumped
        when it is > 0, so cached document frequencies are read again).
    """
    changed = 0
    docs = conn.execute("SELECT collection_path, file_path, text FROM documents WHERE chunk_count > 0")
    for cp, fp, text in docs:
        rows = conn.execute(
            "SELECT rowid, chunk_text, search_text FROM chunks WHERE collection_path = ? AND file_path = ?", (cp, fp)
        ).fetchall()
        fold = keyword_text(text if text is not None else "\n".join(r[1] for r in rows))
        updates = [(new, rid) for rid, chunk_text, old in rows if (new := fold(chunk_text)) != old]
        if updates:
            conn.executemany("UPDATE chunks SET search_text = ? WHERE rowid = ?", updates)
            changed += len(updates)
    if changed:
        conn.execute(
            "INSERT INTO meta(key, value) VALUES ('chunks_gen', '1') "
            "ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1"
        )
    conn.execute(
        "INSERT INTO meta(key, value) VALUES ('keyword_text', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (str(KEYWORD_TEXT_VERSION),),
    )
    return changed


#: An index run that wrote chunks merges ``chunks_fts`` into one segment when it has more
#: segments than this (and the run wrote enough of the index: ``tidy_fts``).
FTS_MAX_SEGMENTS = 4
#: ... the run's chunks must be at least this share of all chunks (bounds the rewrite's cost).
_TIDY_SHARE = 1 / 16


def fts_segments(conn: sqlite3.Connection) -> int:
    """Segments of the ``chunks_fts`` index (distinct ``segid`` of its ``%_idx`` table; a read)."""
    return int(conn.execute("SELECT count(DISTINCT segid) FROM chunks_fts_idx").fetchone()[0])


def tidy_fts(conn: sqlite3.Connection, written: int) -> bool:
    """Merge ``chunks_fts`` into one segment (FTS5 ``optimize``) after a run that wrote
    ``written`` chunks, when the index has more than ``FTS_MAX_SEGMENTS`` segments and
    ``written`` is at least ``_TIDY_SHARE`` of all chunks. True when it merged.

    Why: each FTS5 query looks every term up in every segment, and the keyword
    passes (all terms, then any term) pay that per term and per query: a 100k
    index built in one run has ~14 segments; merged, ``keyword_refs`` takes ~18%
    less. Rankings and scores are unchanged (the same
    doclists, merged). The rewrite costs ~0.6 s per 100k chunks, hence the share:
    a small run on a large index leaves it to FTS5's own automerge.
    Run inside the caller's write transaction.
    """
    if written <= 0:
        return False
    total = int(conn.execute("SELECT count(*) FROM chunks").fetchone()[0])
    if total == 0 or written < _TIDY_SHARE * total or fts_segments(conn) <= FTS_MAX_SEGMENTS:
        return False
    conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES('optimize')")
    return True


def search_keyword(
    read: Callable[[], ContextManager[sqlite3.Connection]],
    df_cache: dict[str, Any],
    query: str,
    collection_paths: Iterable[str] | None,
    limit: int,
) -> list[KeywordHit]:
    """BM25 keyword hits over chunk_text, best first (score = -bm25, higher is better).

    ``query`` is plain words, cut by ``engine.store.fts.keyword_terms``
    (deduplicated, at most ``MAX_TERMS``); each term is quoted, so no FTS5
    syntax error can occur. Latin terms match the ``porter`` index (so
    "running" finds "runs"); CJK terms match the ``trigram`` index as
    substrings (so "东北电气" is found inside a longer run of characters).
    All terms must match; when that finds nothing, any term may (CJK terms
    then match by their 3-character pieces). With both kinds of terms a
    chunk's score is the sum of its two BM25 scores.
    Returns [] for a query without a letter or digit or a limit <= 0.
    The ranking is ``keyword_refs``; then the k rows are read (``chunk_rows``).
    An any-term pass over every collection without CJK terms is ranked from
    per-term lists when the store keeps them (``engine.store.sqlite.term_scores``:
    the same rows, order and scores, bit for bit).
    """
    best = keyword_refs(read, df_cache, query, collection_paths, limit)
    if not best:
        return []
    rows = chunk_rows(read, [b[0] for b in best])
    return [KeywordHit(chunk_of(rows[rid]), float(score)) for rid, score in best if rid in rows]


def keyword_refs(
    read: Callable[[], ContextManager[sqlite3.Connection]],
    df_cache: dict[str, Any],
    query: str,
    collection_paths: Iterable[str] | None,
    limit: int,
) -> list[tuple[int, float]]:
    """The ranking of ``search_keyword`` without reading the rows: ``(chunks rowid, -bm25)`` best first.

    Equal scores go by (collection path, file path, chunk index), whatever order the rows
    were stored in: the pass ranks ``limit + 1`` rows by score, then rowid (the keyword
    index's own order, cheap); when the last two tie, the cut runs through equal scores and
    the pass is ranked again with the key in SQL over the rows scoring at least the
    ``limit``-th; otherwise equal scores inside the answer are put in key order
    (``_by_key``, one read of their keys).
    """
    q = fts_queries(query)
    if q is None or limit <= 0:
        return []
    where = ""
    args: list[Any] = []
    if collection_paths is not None:
        paths = sorted(set(collection_paths))
        if not paths:
            return []
        where = f" AND c.collection_path IN ({','.join('?' * len(paths))})"
        args = paths
    for every, (porter, tri) in zip((True, False), q):
        if not every and porter:
            porter = selective_any(read, df_cache, porter)
            if not tri and collection_paths is None:  # per-term lists when they are kept (exact)
                got = any_term_refs(read, df_cache, porter, int(limit) + 1)
                if got is not None and not _tied_at(got, limit):
                    return _by_key(read, got, limit)
        parts = [(t, m) for t, m in (("chunks_fts", porter), ("chunks_tri", tri)) if m]
        if not parts:
            continue
        sub = [f"SELECT rowid AS rid, -bm25({t}) AS s FROM {t} WHERE {t} MATCH ?" for t, _ in parts]
        if len(sub) == 1:
            ranked = sub[0]
        elif every:  # all terms: a chunk must match in both indexes
            ranked = f"SELECT a.rid AS rid, a.s + b.s AS s FROM ({sub[0]}) a JOIN ({sub[1]}) b ON a.rid = b.rid"
        else:  # any term: either index, scores summed
            ranked = f"SELECT rid, sum(s) AS s FROM ({sub[0]} UNION ALL {sub[1]}) GROUP BY rid"
        # rank first (rowid + score only, so the sorter stays small), then read the k rows
        if where:
            top = (
                f"SELECT r.rid, r.s FROM ({ranked}) r JOIN chunks c ON c.rowid = r.rid "
                f"WHERE 1{where} ORDER BY r.s DESC, r.rid LIMIT ?"
            )
        else:
            top = f"SELECT r.rid, r.s FROM ({ranked}) r ORDER BY r.s DESC, r.rid LIMIT ?"
        # a tie at the cut: the rows scoring at least the k-th, ranked by score and key (the
        # chunk row is joined only for those: r.s is tested on the outer loop)
        keyed = (
            f"SELECT r.rid, r.s FROM ({ranked}) r CROSS JOIN chunks c ON c.rowid = r.rid "
            f"WHERE r.s >= ?{where} ORDER BY r.s DESC, c.collection_path, c.file_path, c.chunk_index LIMIT ?"
        )
        matches = [m for _, m in parts]
        with read() as conn:
            best = conn.execute(top, [*matches, *args, int(limit) + 1]).fetchall()
            if _tied_at(best, limit):
                best = conn.execute(keyed, [*matches, best[limit - 1][1], *args, int(limit)]).fetchall()
                return [(rid, float(score)) for rid, score in best]
        if best:
            return _by_key(read, [(rid, float(score)) for rid, score in best], limit)
    return []


def _tied_at(ranked: list, limit: int) -> bool:
    """True when ``ranked`` (best first, ``(rowid, score)``) has a row past ``limit`` scoring as the ``limit``-th."""
    return len(ranked) > limit and ranked[limit][1] == ranked[limit - 1][1]


#: Sorts after every chunk key (a row gone since it was ranked: the read of the rows drops it).
_LAST = ("\U0010ffff", "", 0)


def _by_key(
    read: Callable[[], ContextManager[sqlite3.Connection]], ranked: list[tuple[int, float]], limit: int
) -> list[tuple[int, float]]:
    """The first ``limit`` of ``ranked`` (score descending, no tie at the cut) with each run of
    equal scores in (collection path, file path, chunk index) order: one read of those rows' keys."""
    ranked = ranked[:limit]
    tied = [
        rid
        for i, (rid, s) in enumerate(ranked)
        if (i and ranked[i - 1][1] == s) or (i + 1 < len(ranked) and ranked[i + 1][1] == s)
    ]
    if not tied:
        return ranked
    marks = ",".join("?" * len(tied))
    with read() as conn:
        keys = {
            r[0]: r[1:]
            for r in conn.execute(
                f"SELECT rowid, collection_path, file_path, chunk_index FROM chunks WHERE rowid IN ({marks})", tied
            )
        }
    return sorted(ranked, key=lambda x: (-x[1], keys.get(x[0], _LAST)))


def chunk_rows(read: Callable[[], ContextManager[sqlite3.Connection]], rowids: list[int]) -> dict[int, tuple]:
    """``chunks`` rowid -> its row in ``CHUNK_COLUMNS`` order, for the rowids that exist (one query)."""
    if not rowids:
        return {}
    cols = ", ".join("c." + x.strip() for x in CHUNK_COLUMNS.split(","))
    marks = ",".join("?" * len(rowids))
    with read() as conn:
        return {
            r[0]: r[1:]
            for r in conn.execute(f"SELECT c.rowid, {cols} FROM chunks c WHERE c.rowid IN ({marks})", rowids)
        }


def selective_any(read: Callable[[], ContextManager[sqlite3.Connection]], cache: dict[str, Any], any_query: str) -> str:
    """The any-term porter query cut to its ``KEYWORD_ANY_TERMS`` rarest terms, leaving out
    terms found in more than ``KEYWORD_COMMON_SHARE`` of the chunks while rarer ones remain.

    Why: scoring cost grows with the chunks an OR query matches, and a term in a
    large share of the chunks carries little BM25 weight (FTS5 clamps an IDF <= 0
    to 1e-6) yet makes the pass score most of the index. Document frequencies
    come from ``count(*)`` of each term's match (cheap: no scoring), cached in
    ``cache`` (the store's dict) per ``chunks_gen``.
    """
    terms = any_query.split(" OR ")
    if len(terms) <= 2:
        return any_query
    with read() as conn:
        gen = keyword_state(conn, cache)
        n = cache["n"] if cache.get("gen") == gen else conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        df = document_counts(conn, cache, terms, gen)
    ranked = sorted(terms, key=lambda t: df[t])
    common = max(1, int(n * KEYWORD_COMMON_SHARE))
    kept = [t for t in ranked if df[t] <= common][:KEYWORD_ANY_TERMS] or ranked[:2]
    return " OR ".join(kept)


class KeywordIndex:
    """The keyword methods of one SQLite store: BM25 search, its row-id variant and the tidy.

    Args:
        read, write: the store's read and write transaction helpers (a context
            manager per call, giving the connection).
        cache: the store's keyword cache dict (document frequencies and per-term
            lists of one ``chunks_gen``: ``engine.store.sqlite.term_scores``); the
            store clears it when it closes.
    """

    def __init__(
        self,
        read: Callable[[], ContextManager[sqlite3.Connection]],
        write: Callable[[], ContextManager[sqlite3.Connection]],
        cache: dict[str, Any],
    ) -> None:
        self._read = read
        self._write = write
        self._cache = cache

    def search(self, query: str, collection_paths: Iterable[str] | None, limit: int) -> list[KeywordHit]:
        """``search_keyword`` on this store (see the module function)."""
        return search_keyword(self._read, self._cache, query, collection_paths, limit)

    def refs(self, query: str, collection_paths: Iterable[str] | None, limit: int) -> list[tuple[int, float]]:
        """``keyword_refs`` on this store: ``(chunks rowid, -bm25)`` best first."""
        return keyword_refs(self._read, self._cache, query, collection_paths, limit)

    def tidy(self, written: int) -> bool:
        """``tidy_fts`` after a run that wrote ``written`` chunks, checked with reads first, so a
        run with nothing to merge takes no writer lock. True when it merged.

        Raises:
            StoreBusyError: another writer held the lock past the busy timeout.
        """
        if written <= 0:
            return False
        with self._read() as conn:
            total = int(conn.execute("SELECT count(*) FROM chunks").fetchone()[0])
            if total == 0 or written < _TIDY_SHARE * total or fts_segments(conn) <= FTS_MAX_SEGMENTS:
                return False
        with self._write() as conn:
            return tidy_fts(conn, written)
