"""The explorer names a store fault by its code: a Rebuild started on a full disk ends with
``error: disk-full`` (the code every face uses) and its failure callout has a title and who
can fix it.

Real parts: a complete index on a small tmpfs (``tests/fixtures/small_disk.py``; skipped with
the reason when it cannot be mounted) filled to the last byte, the explorer's ``IndexJob``.
"""

from __future__ import annotations

from engine.config import Settings
from engine.errors import WHO_FIXES
from engine.service import Engine
from explorer.jobs import IndexJob
from explorer.widgets import FAILURE_TITLES
from tests.conftest import ALLOWED_ROOTS
from tests.fixtures.small_disk import fill, small_disk


def test_a_rebuild_on_a_full_disk_ends_with_the_disk_full_code(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n" + "words about anvils " * 40, "utf-8")
    with small_disk(tmp_path / "disk", "8m") as disk:
        settings = Settings(allowed_roots=ALLOWED_ROOTS, db=str(disk / "i.db"), embed_provider="none").validate()
        eng = Engine(settings)
        eng.add_collection("C", str(docs))
        assert eng.run_index()["indexed"] == 1
        eng.close()
        fill(disk)
        job, eng = IndexJob(), Engine(settings)
        try:
            assert job.start(eng, force=True) is True
            assert job.wait(90)
            snap = job.snapshot()
        finally:
            eng.close()
    assert snap["status"] == "error" and snap["error"] == "disk-full", snap
    assert "full" in snap["message"]
    for code in ("disk-full", "index-unavailable", "store-busy"):
        assert code in FAILURE_TITLES and code in WHO_FIXES
