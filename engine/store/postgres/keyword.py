"""Postgres keyword search: full-text hits over the partitions' chunk text.

Owns: ``refresh_keyword_text`` (the keyword text of stored rows, filled once when a
partition's keyword columns are made from it), the tsquery passes (English stemmed, then ``simple``; all terms, then
any term), CJK substring matching and the merge of per-partition hits. A
helper of ``engine.store.postgres.store.PostgresStore.search_keyword``. Imports
psycopg (the ``[postgres]`` extra) and the store's row helpers; never a face.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from psycopg import sql

from engine.values import KeywordHit
from engine.store.fts import keyword_terms, keyword_text
from engine.store.postgres.rows import CHUNK_SELECT, key_order, row_to_chunk

__all__ = ["search_keyword", "refresh_keyword_text"]


def refresh_keyword_text(conn: Any, schema: str) -> int:
    """Fill ``search_text`` of every stored chunk of ``schema`` by the current rules
    (``engine.store.fts.keyword_text`` over its document's stored text); the generated
    ``tsv`` / ``tsv_en`` columns follow. Inside the caller's transaction.

    Returns:
        The number of chunk rows whose keyword text changed.
    """
    s = sql.Identifier(schema)
    changed = 0
    docs = conn.execute(
        sql.SQL("SELECT collection_path, file_path, text FROM {}.documents WHERE chunk_count > 0").format(s)
    ).fetchall()
    for d in docs:
        key = (d["collection_path"], d["file_path"])
        rows = conn.execute(
            sql.SQL(
                "SELECT chunk_index, chunk_text, search_text FROM {}.content_chunks "
                "WHERE collection_path = %s AND file_path = %s ORDER BY chunk_index"
            ).format(s),
            key,
        ).fetchall()
        text = d["text"] if d["text"] is not None else "\n".join(r["chunk_text"] for r in rows)
        fold = keyword_text(text)
        updates = [
            (new, *key, r["chunk_index"]) for r in rows if (new := _pg(fold(r["chunk_text"]))) != r["search_text"]
        ]
        if updates:
            with conn.cursor() as cur:
                cur.executemany(
                    sql.SQL(
                        "UPDATE {}.content_chunks SET search_text = %s "
                        "WHERE collection_path = %s AND file_path = %s AND chunk_index = %s"
                    ).format(s),
                    updates,
                )
            changed += len(updates)
    return changed


def _pg(value: str | None) -> str | None:
    """Postgres text holds no NUL (``engine.store.postgres.rows.pg_text``)."""
    return None if value is None else value.replace("\x00", "\ufffd")


def search_keyword(
    pool: Any,
    schemas: Callable[[list[str] | None], dict[str, list[str] | None]],
    query: str,
    collection_paths: Iterable[str] | None,
    limit: int,
) -> list[KeywordHit]:
    """Full-text hits over chunk_text, best first; all terms first, then any term.

    The query is cut by ``engine.store.fts.keyword_terms`` (deduplicated,
    at most ``MAX_TERMS``). Latin terms are matched by
    ``plainto_tsquery('english', ...)`` against ``tsv_en`` (Snowball
    stemming: "running" finds "runs"), falling back to the ``'simple'``
    configuration when the English one finds nothing (a query of stop
    words, say); CJK terms are matched as substrings (``strpos``, no index:
    a scan of the scoped partitions). No query syntax is interpreted.

    Args:
        query: plain words.
        collection_paths: collections to search (None: all).
        limit: most hits returned.

    Returns:
        Hits best first; ``score`` = ``ts_rank_cd`` (cover density, > 0,
        higher is better, unbounded) plus 1 per CJK term found. No letter
        or digit, or limit <= 0 -> [].

    ``pool`` is the store's psycopg pool; ``schemas`` maps collection paths
    (None: all) to {partition schema: paths or None}.
    """
    terms = keyword_terms(query.replace("\x00", " "))
    if limit <= 0 or not terms:
        return []
    latin = " ".join(terms.latin)
    targets = schemas(None if collection_paths is None else list(collection_paths))
    cols = sql.SQL(", ").join(sql.SQL("c.{}").format(sql.Identifier(n.strip())) for n in CHUNK_SELECT.split(","))
    passes = []
    for config, column in (("english", "tsv_en"), ("simple", "tsv")):
        for joiner in (" & ", " | "):
            passes.append((config, column, joiner))
    hits: list[KeywordHit] = []
    with pool.connection() as conn:
        for config, column, joiner in passes:
            params: dict[str, Any] = {"q": latin, "k": limit, "cfg": config}
            conds: list[sql.Composable] = []
            score: sql.Composable = sql.SQL("0")
            if latin:
                tq = sql.SQL("replace(plainto_tsquery(%(cfg)s::regconfig, %(q)s)::text, ' & ', %(j)s)::tsquery")
                params["j"] = joiner
                conds.append(sql.SQL("c.{col} @@ q.tq").format(col=sql.Identifier(column)))
                score = sql.SQL("ts_rank_cd(c.{col}, q.tq)").format(col=sql.Identifier(column))
            else:
                tq = sql.SQL("NULL::tsquery")
            for n, term in enumerate(terms.cjk):
                params[f"t{n}"] = term
                found = sql.SQL("(strpos(c.chunk_text, %({})s) > 0)").format(sql.SQL(f"t{n}"))
                conds.append(found)
                score = sql.SQL("{} + {}::int").format(score, found)
            where = sql.SQL(" AND " if joiner == " & " else " OR ").join(conds)
            for schema, paths in targets.items():
                full = sql.SQL("({})").format(where)
                if paths is not None:
                    full += sql.SQL(" AND c.collection_path = ANY(%(paths)s)")
                    params["paths"] = paths
                rows = conn.execute(
                    sql.SQL(
                        "SELECT {cols}, {score} AS score FROM {s}.content_chunks c, "
                        "(SELECT {tsq} AS tq) q WHERE {where} "
                        f"ORDER BY score DESC, {key_order('c')} LIMIT %(k)s"
                    ).format(cols=cols, score=score, s=sql.Identifier(schema), tsq=tq, where=full),
                    params,
                ).fetchall()
                hits.extend(KeywordHit(row_to_chunk(r), float(r["score"])) for r in rows)
            if hits:
                break
    hits.sort(key=lambda h: (-h.score, h.chunk.collection_path, h.chunk.file_path, h.chunk.chunk_index))
    return hits[:limit]
