"""Schema and provisioning of the Postgres store: DDL, catalog checks, naming.

Owns: the table layout of the shared ``chunknav`` schema and of each
partition schema, the partition and schema naming (``partition_of``,
``schema_for``), the idempotent additive provisioning (``CREATE ... IF NOT
EXISTS`` and ``ALTER TABLE ... ADD COLUMN IF NOT EXISTS`` after reading the
catalogs), the ``vector`` extension check and the DDL of the partial HNSW
vector indexes. ``engine/store/postgres/store.py`` (``PostgresStore``) calls these on
a connection it owns; nothing here holds a pool, a cache or a lock of its own.
Imports psycopg 3 only; must not import streamlit, mcp, argparse,
``engine.store.postgres.store``, ``engine.store.postgres.rows`` or any other engine
module.

Layout (see ``docs/postgres.md``)::

    chunknav                      shared schema
      collections                 collection_path -> root, password, partition
      partitions                  partition -> schema_name
      vectors                     (chunk_id, model) -> dim, embedding, created;
                                  one partial HNSW index per (model, dim)
      runs                        saved index-run summaries (JSON)
      vector_texts                (text_hash, model) -> chunk_id, truncated_chars
      embed_notes                 (chunk_id, model) -> kind, chars, code, reason
    cnp_<slug>_<hash8>            one schema per partition (first segment of
      documents                   collection_path, e.g. ``ACME``)
      content_chunks

Provisioning is idempotent and additive: ``CREATE ... IF NOT EXISTS`` for
schemas, tables and indexes, then ``ALTER TABLE ... ADD COLUMN IF NOT EXISTS``
for every column, so a partition that lacks a column or index gains it the
next time a process touches it. DDL runs under a transaction-scoped
advisory lock, so several processes may provision at once.
"""

from __future__ import annotations

import hashlib
import re
import time
from typing import Any

import psycopg
from psycopg import sql

#: A connection of the store's pool: autocommit, rows as dicts (``dict_row``).
DictConnection = psycopg.Connection[dict[str, Any]]

__all__ = [
    "DictConnection",
    "SHARED_SCHEMA",
    "HNSW_MAX_DIM",
    "HALFVEC_MAX_DIM",
    "HNSW_M",
    "HNSW_EF_CONSTRUCTION",
    "DDL_LOCK_KEY",
    "DOCUMENT_COLUMNS",
    "CHUNK_COLUMNS",
    "SHARED_TABLES",
    "PARTITION_TABLES",
    "KEYWORD_COLUMNS",
    "stale_keyword_columns",
    "partition_of",
    "schema_for",
    "hnsw_index_name",
    "vector_type",
    "ensure_vector_extension",
    "one_row",
    "apply_ddl",
    "provision_shared",
    "provision_partition",
    "schema_exists",
    "hnsw_index_sql",
    "has_hnsw_index",
    "build_hnsw_index",
]

#: The schema holding the collections registry, partitions, vectors and runs.
SHARED_SCHEMA = "chunknav"
#: Largest dimension pgvector's HNSW indexes as ``vector`` (float32).
HNSW_MAX_DIM = 2000
#: Largest dimension indexed as ``halfvec`` (float16); above it search is exact.
HALFVEC_MAX_DIM = 4000
#: HNSW build parameters (pgvector defaults; recall measured in tests/store/test_postgres.py).
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 64
#: Transaction advisory-lock key serialising DDL (provisioning) across processes.
DDL_LOCK_KEY = 0x63686E6B646466  # "chnkddf"

# Columns added with ADD COLUMN IF NOT EXISTS on every provision: (name, type and default).
# Keys stay in CREATE TABLE; everything else is listed here, so an old-shaped
# table gains any column added later by appending a line.
DOCUMENT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("content_hash", "text NOT NULL DEFAULT ''"),
    ("settings_key", "text NOT NULL DEFAULT ''"),
    ("file_type", "text NOT NULL DEFAULT ''"),
    ("status", "text NOT NULL DEFAULT 'indexed'"),
    ("reason", "text"),
    ("size_bytes", "bigint NOT NULL DEFAULT 0"),
    ("last_modified", "double precision NOT NULL DEFAULT 0"),
    ("indexed_at", "double precision NOT NULL DEFAULT 0"),
    ("page_count", "integer NOT NULL DEFAULT 0"),
    ("chunk_count", "integer NOT NULL DEFAULT 0"),
    ("text_length", "integer NOT NULL DEFAULT 0"),
    ("summary", "text NOT NULL DEFAULT ''"),
    ("metadata", "jsonb NOT NULL DEFAULT '{}'::jsonb"),
    ("text", "text"),
)
CHUNK_COLUMNS: tuple[tuple[str, str], ...] = (
    ("chunk_id", "text NOT NULL DEFAULT ''"),
    ("content_hash", "text NOT NULL DEFAULT ''"),
    ("start_char", "integer NOT NULL DEFAULT 0"),
    ("end_char", "integer NOT NULL DEFAULT 0"),
    ("chunk_text", "text NOT NULL DEFAULT ''"),
    ("metadata", "jsonb NOT NULL DEFAULT '{}'::jsonb"),
    ("page", "integer"),
    ("page_label", "text"),
    ("bbox", "jsonb"),
    ("regions", "jsonb NOT NULL DEFAULT '[]'::jsonb"),
    ("last_modified", "double precision NOT NULL DEFAULT 0"),
    # The keyword text where it differs from chunk_text (engine.store.fts.keyword_text), else NULL.
    ("search_text", "text"),
    # 'simple': no stemming, no stop words, like SQLite FTS5's unicode61.
    ("tsv", "tsvector GENERATED ALWAYS AS (to_tsvector('simple', coalesce(search_text, chunk_text))) STORED"),
    # 'english': Snowball stemming and stop words, the equivalent of SQLite's porter index.
    ("tsv_en", "tsvector GENERATED ALWAYS AS (to_tsvector('english', coalesce(search_text, chunk_text))) STORED"),
)
#: The generated keyword columns of ``content_chunks``: computed from the keyword text.
KEYWORD_COLUMNS = ("tsv", "tsv_en")

#: One table: (name, key columns and constraints, columns, indexes); see ``apply_ddl``.
TableSpec = tuple[str, str, tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]

#: Shared-schema tables: (name, keys, columns, indexes); see ``apply_ddl``.
SHARED_TABLES: tuple[TableSpec, ...] = (
    (
        "collections",
        "collection_path text PRIMARY KEY",
        (("root", "text NOT NULL DEFAULT ''"), ("password", "text"), ("partition", "text NOT NULL DEFAULT ''")),
        (),
    ),
    (
        "partitions",
        "partition text PRIMARY KEY, schema_name text NOT NULL UNIQUE",
        (("provisioned_at", "double precision NOT NULL DEFAULT 0"),),
        (),
    ),
    (
        "vectors",
        "chunk_id text NOT NULL, model text NOT NULL, PRIMARY KEY (chunk_id, model)",
        (
            ("dim", "integer NOT NULL DEFAULT 0"),
            ("embedding", "vector"),
            ("created", "double precision NOT NULL DEFAULT 0"),
        ),
        (("vectors_model_dim", "(model, dim)"),),
    ),
    (
        "runs",
        "id bigserial PRIMARY KEY",
        (("saved_at", "double precision NOT NULL DEFAULT 0"), ("summary", "jsonb NOT NULL DEFAULT '{}'::jsonb")),
        (),
    ),
    # embedding notes (engine/store/postgres/notes.py): window-text hash -> the chunk whose vector holds it,
    # and per (chunk, model) a truncation or a failure of the embed pass.
    (
        "vector_texts",
        "text_hash text NOT NULL, model text NOT NULL, PRIMARY KEY (text_hash, model)",
        (("chunk_id", "text NOT NULL DEFAULT ''"), ("truncated_chars", "integer")),
        (),
    ),
    (
        "embed_notes",
        "chunk_id text NOT NULL, model text NOT NULL, PRIMARY KEY (chunk_id, model)",
        (
            ("kind", "text NOT NULL DEFAULT ''"),
            ("chars", "integer"),
            ("code", "text"),
            ("reason", "text"),
            ("created", "double precision NOT NULL DEFAULT 0"),
        ),
        (),
    ),
)
#: Per-partition tables, in the order writes touch them (documents, then chunks).
PARTITION_TABLES: tuple[TableSpec, ...] = (
    (
        "documents",
        "collection_path text NOT NULL, file_path text NOT NULL, PRIMARY KEY (collection_path, file_path)",
        DOCUMENT_COLUMNS,
        (),
    ),
    (
        "content_chunks",
        "collection_path text NOT NULL, file_path text NOT NULL, chunk_index integer NOT NULL, "
        "PRIMARY KEY (collection_path, file_path, chunk_index)",
        CHUNK_COLUMNS,
        (
            ("content_chunks_chunk_id", "(chunk_id)"),
            ("content_chunks_collection", "(collection_path, chunk_id)"),
            ("content_chunks_tsv", "USING gin (tsv)"),
            ("content_chunks_tsv_en", "USING gin (tsv_en)"),
        ),
    ),
)


def partition_of(collection_path: str) -> str:
    """The partition of a collection: its first path segment (``ACME/Reports`` -> ``ACME``).

    Raises:
        ValueError: an empty collection path.
    """
    head = collection_path.strip("/").split("/", 1)[0]
    if not head:
        raise ValueError(f"collection_path must not be empty, got {collection_path!r}")
    return head


def schema_for(partition: str) -> str:
    """The schema name of a partition: ``cnp_<ascii slug, <= 40 chars>_<sha256[:8]>``.

    Lower-case, at most 53 characters (Postgres allows 63), stable across
    processes and versions. The hash keeps ``ACME`` and ``acme`` (or two names
    with the same slug) apart; the slug keeps it readable in ``\\dn``.
    """
    slug = re.sub(r"[^a-z0-9]+", "_", partition.lower()).strip("_")[:40] or "p"
    digest = hashlib.sha256(partition.encode("utf-8")).hexdigest()[:8]
    return f"cnp_{slug}_{digest}"


def hnsw_index_name(model: str, dim: int) -> str:
    """Name of the partial HNSW index of ``(model, dim)``: ``vectors_hnsw_<sha256[:16]>`` (any model name fits)."""
    return "vectors_hnsw_" + hashlib.sha256(f"{model}\0{dim}".encode()).hexdigest()[:16]


def vector_type(dim: int) -> str | None:
    """The pgvector type an HNSW index of ``dim`` uses, or None (too wide: exact only)."""
    if dim <= HNSW_MAX_DIM:
        return "vector"
    if dim <= HALFVEC_MAX_DIM:
        return "halfvec"
    return None


def one_row(row: Any) -> Any:
    """A statement's single row (an aggregate or ``RETURNING`` always has one).

    Raises:
        RuntimeError: the statement returned no row.
    """
    if row is None:
        raise RuntimeError("expected one row, got none")
    return row


def ensure_vector_extension(conn: psycopg.Connection[Any]) -> str:
    """Create the ``vector`` extension when missing; returns its version (e.g. ``"0.8.0"``).

    ``conn`` must be in autocommit mode. The extension must exist before
    ``register_vector()`` can find its type. Checked first, so a role without
    CREATE on the database works once it exists.

    Raises:
        psycopg.errors.InsufficientPrivilege: the extension is missing and the
            role may not create it.
    """
    if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone() is None:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (DDL_LOCK_KEY,))
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    row = one_row(conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone())
    return str(row["extversion"] if isinstance(row, dict) else row[0])


def apply_ddl(conn: DictConnection, schema: str, tables: tuple[TableSpec, ...]) -> bool:
    """Bring ``schema`` up to ``tables``; returns True when any DDL ran.

    Each table is ``(name, key columns and constraints, columns, indexes)``
    with columns ``(name, type and default)`` and indexes ``(name, method
    and columns)``. The catalogs are read first and only what is missing
    is executed (``CREATE ... IF NOT EXISTS``, ``ADD COLUMN IF NOT
    EXISTS``): an up-to-date schema takes no table lock, so provisioning
    never blocks or deadlocks with readers and writers. Tables are
    visited in the given order, the same order the writes use.

    ``conn`` must be inside a transaction (``dict_row`` rows); the DDL lock is
    transaction-scoped.
    """
    s = sql.Identifier(schema)
    have_schema = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone()
    cols = {
        (r["table_name"], r["column_name"])
        for r in conn.execute(
            "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = %s", (schema,)
        ).fetchall()
    }
    tables_have = {t for t, _c in cols}
    indexes = {
        r["indexname"]
        for r in conn.execute("SELECT indexname FROM pg_indexes WHERE schemaname = %s", (schema,)).fetchall()
    }
    todo: list[sql.Composed] = []
    if have_schema is None:
        todo.append(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(s))
    for table, keys, columns, table_indexes in tables:
        t = sql.Identifier(table)
        if table not in tables_have:
            todo.append(sql.SQL("CREATE TABLE IF NOT EXISTS {}.{} ({})").format(s, t, sql.SQL(keys)))
        for name, decl in columns:
            if (table, name) not in cols:
                todo.append(
                    sql.SQL("ALTER TABLE {}.{} ADD COLUMN IF NOT EXISTS {} {}").format(
                        s, t, sql.Identifier(name), sql.SQL(decl)
                    )
                )
        for name, spec in table_indexes:
            if name not in indexes:
                todo.append(
                    sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {}.{} {}").format(
                        sql.Identifier(name), s, t, sql.SQL(spec)
                    )
                )
    if todo:
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (DDL_LOCK_KEY,))
        for stmt in todo:
            conn.execute(stmt)
    return bool(todo)


def provision_shared(conn: DictConnection) -> bool:
    """Create or upgrade the shared ``chunknav`` schema (see ``apply_ddl``); True when any DDL ran.

    Also blanks a collection password that is not a reference (``env:``/``file:``):
    the index keeps only references (``engine.passwords``)."""
    changed = apply_ddl(conn, SHARED_SCHEMA, SHARED_TABLES)
    from engine.passwords import LEGACY_PASSWORD_SQL

    if conn.execute(
        sql.SQL(f"SELECT 1 FROM {{}}.collections WHERE {LEGACY_PASSWORD_SQL} LIMIT 1").format(
            sql.Identifier(SHARED_SCHEMA)
        )
    ).fetchone():
        conn.execute(
            sql.SQL(f"UPDATE {{}}.collections SET password = NULL WHERE {LEGACY_PASSWORD_SQL}").format(
                sql.Identifier(SHARED_SCHEMA)
            )
        )
    return changed


def stale_keyword_columns(conn: DictConnection, schema: str) -> bool:
    """True when ``schema``'s ``content_chunks`` has a ``KEYWORD_COLUMNS`` column generated
    from the chunk text alone (not from the keyword text ``search_text``); a read."""
    rows = conn.execute(
        "SELECT pg_get_expr(d.adbin, d.adrelid) AS expr FROM pg_attribute a "
        "JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum "
        "WHERE a.attrelid = to_regclass(quote_ident(%s) || '.content_chunks') "
        "AND a.attname = ANY(%s) AND NOT a.attisdropped",
        (schema, list(KEYWORD_COLUMNS)),
    ).fetchall()
    return any("search_text" not in r["expr"] for r in rows)


def provision_partition(conn: DictConnection, partition: str) -> str:
    """Create or upgrade one partition's schema and register it, inside the caller's transaction.

    Creates the schema and its tables when missing and adds every column or
    index it lacks (``ADD COLUMN IF NOT EXISTS``, ``CREATE
    INDEX IF NOT EXISTS``); a schema already up to date is only read.
    Registers the partition in ``chunknav.partitions`` (``provisioned_at``,
    Unix seconds, is updated only when DDL ran). Keyword columns generated from
    the chunk text alone (``stale_keyword_columns``) are dropped and made again
    from the keyword text (one rewrite of the table and its GIN indexes); the
    caller then fills ``search_text`` of the stored rows
    (``engine.store.postgres.keyword.refresh_keyword_text``).

    Args:
        conn: a connection inside a transaction, shared schema provisioned.
        partition: the first segment of a collection path, e.g. ``ACME``.

    Returns:
        The schema name (``schema_for(partition)``).
    """
    schema = schema_for(partition)
    if stale_keyword_columns(conn, schema):  # generated from chunk_text: made again from the keyword text
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (DDL_LOCK_KEY,))
        for name in KEYWORD_COLUMNS:
            conn.execute(
                sql.SQL("ALTER TABLE {}.content_chunks DROP COLUMN IF EXISTS {}").format(
                    sql.Identifier(schema), sql.Identifier(name)
                )
            )
    changed = apply_ddl(conn, schema, PARTITION_TABLES)
    conn.execute(
        sql.SQL(
            "INSERT INTO {}.partitions (partition, schema_name, provisioned_at) VALUES (%s, %s, %s) "
            "ON CONFLICT (partition) DO "
            + ("UPDATE SET provisioned_at = EXCLUDED.provisioned_at" if changed else "NOTHING")
        ).format(sql.Identifier(SHARED_SCHEMA)),
        (partition, schema, time.time()),
    )
    return schema


def schema_exists(conn: DictConnection, schema: str) -> bool:
    """True when ``schema`` exists in the catalog (``pg_namespace``); creates nothing."""
    return conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone() is not None


def hnsw_index_sql(model: str, dim: int) -> sql.Composed | None:
    """``CREATE INDEX IF NOT EXISTS`` of the (model, dim) HNSW index; None above ``HALFVEC_MAX_DIM``."""
    kind = vector_type(dim)
    if kind is None:
        return None
    return sql.SQL(
        "CREATE INDEX IF NOT EXISTS {} ON {}.vectors USING hnsw ((embedding::{}({})) {}) "
        "WITH (m = {}, ef_construction = {}) WHERE model = {} AND dim = {}"
    ).format(
        sql.Identifier(hnsw_index_name(model, dim)),
        sql.Identifier(SHARED_SCHEMA),
        sql.SQL(kind),
        sql.Literal(dim),
        sql.SQL(f"{kind}_cosine_ops"),
        sql.Literal(HNSW_M),
        sql.Literal(HNSW_EF_CONSTRUCTION),
        sql.Literal(model),
        sql.Literal(dim),
    )


def has_hnsw_index(conn: DictConnection, model: str, dim: int) -> bool:
    """True when the (model, dim) HNSW index exists (takes no lock)."""
    r = one_row(
        conn.execute(
            "SELECT to_regclass(%s) IS NOT NULL AS ok", (f"{SHARED_SCHEMA}.{hnsw_index_name(model, dim)}",)
        ).fetchone()
    )
    return bool(r["ok"])


def build_hnsw_index(conn: DictConnection, ddl: sql.Composed, build_memory_mb: int) -> None:
    """Run one ``hnsw_index_sql`` statement under the DDL lock, inside the caller's transaction.

    Args:
        conn: a connection inside a transaction (the lock and
            ``maintenance_work_mem`` last until it ends).
        ddl: the statement from ``hnsw_index_sql`` (not None).
        build_memory_mb: ``maintenance_work_mem`` for this build, in MiB.
    """
    conn.execute("SELECT pg_advisory_xact_lock(%s)", (DDL_LOCK_KEY,))
    conn.execute(sql.SQL("SET LOCAL maintenance_work_mem = {}").format(sql.Literal(f"{build_memory_mb}MB")))
    conn.execute(ddl)
