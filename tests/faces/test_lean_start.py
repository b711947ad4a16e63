"""Lean process start: numpy on first use, the Tesseract version remembered
beside the index, line rectangles coded without numpy. Correctness only, no timings."""

from __future__ import annotations

import pytest
import base64
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
from hypothesis import given, settings as hsettings, strategies as st

from engine.index.gate import settings_key
from engine.extract import ocr
from engine.values import RECT_GRID, Bbox, rects_code, rects_decode

REPO = Path(__file__).resolve().parents[2]


def test_lazy_numpy_loads_on_first_use_and_is_numpy_after():
    code = (
        "import sys, threading\n"
        "import engine.values, engine.chunk, engine.store.sqlite.store, engine.extract, engine.index.indexer\n"
        "assert 'numpy' not in sys.modules\n"
        "from engine.lazy import np\n"
        "out = []\n"
        "ts = [threading.Thread(target=lambda: out.append(np.arange(3).sum())) for _ in range(8)]\n"
        "[t.start() for t in ts]; [t.join() for t in ts]\n"
        "import numpy\n"
        "assert out == [3] * 8, out\n"
        "assert np.ndarray is numpy.ndarray and np.float32 is numpy.float32 and np.__version__ == numpy.__version__\n"
        "assert 'array' in vars(np)  # copied: later reads are plain lookups\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True)


def _rects_code_numpy(rects):
    """The same coding with numpy (the reference)."""
    units = np.rint(np.array([(r.x, r.y, r.w, r.h) for r in rects], np.float64) * RECT_GRID)
    return base64.b64encode(np.clip(units, 0, RECT_GRID).astype("<u2").tobytes()).decode("ascii")


def _rects_decode_numpy(code):
    units = np.frombuffer(base64.b64decode(code), "<u2").reshape(-1, 4) / RECT_GRID
    return tuple(Bbox(*row) for row in units.tolist())


_unit = st.one_of(
    st.floats(-0.5, 1.5, allow_nan=False),
    st.integers(0, RECT_GRID).map(lambda k: k / RECT_GRID),
    st.integers(0, 2 * RECT_GRID).map(lambda k: k / (2 * RECT_GRID)),
)  # exact halves: ties to even


@pytest.mark.slow
@hsettings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(_unit, _unit, _unit, _unit), min_size=1, max_size=12))
def test_rects_code_and_decode_equal_the_numpy_versions(boxes):
    rects = tuple(Bbox(*b) for b in boxes)
    code = rects_code(rects)
    assert code == _rects_code_numpy(rects)
    assert rects_decode(code) == _rects_decode_numpy(code)


def test_the_tesseract_version_is_remembered_beside_the_index(tmp_path, monkeypatch):
    cache = str(tmp_path / "index.db.tesseract.json")
    asked = []

    def ask():
        asked.append(1)
        return str(tmp_path), "tesseract 9.9.9"

    monkeypatch.setattr(ocr, "_ask_tesseract_version", ask)  # (the real one is asked once per process)
    ocr.tesseract_version.cache_clear()
    assert ocr.tesseract_version(cache) == "tesseract 9.9.9" and len(asked) == 1
    ocr.tesseract_version.cache_clear()  # a new process
    assert ocr.tesseract_version(cache) == "tesseract 9.9.9" and len(asked) == 1  # read, not asked
    ocr.tesseract_version.cache_clear()
    monkeypatch.setenv("TESSDATA_PREFIX", str(tmp_path / "elsewhere"))  # what it depends on changed
    assert ocr.tesseract_version(cache) == "tesseract 9.9.9" and len(asked) == 2
    ocr.tesseract_version.cache_clear()
    Path(cache).write_text("{not json", "utf-8")  # damaged: asked again, rewritten
    assert ocr.tesseract_version(cache) == "tesseract 9.9.9" and len(asked) == 3
    ocr.tesseract_version.cache_clear()
    data = json.loads(Path(cache).read_text("utf-8"))
    data["at"] -= 2 * 24 * 3600  # older than a day: asked again
    Path(cache).write_text(json.dumps(data), "utf-8")
    assert ocr.tesseract_version(cache) == "tesseract 9.9.9" and len(asked) == 4
    ocr.tesseract_version.cache_clear()


def test_the_settings_key_is_the_same_with_the_remembered_version(tmp_path):
    from engine.config import Settings

    ocr.tesseract_version.cache_clear()
    fresh = settings_key(Settings(db=":memory:"))  # asked
    ocr.tesseract_version.cache_clear()
    first = settings_key(Settings(db=str(tmp_path / "i.db")))  # asked, saved
    ocr.tesseract_version.cache_clear()
    again = settings_key(Settings(db=str(tmp_path / "i.db")))  # read
    assert fresh == first == again
    assert (tmp_path / "i.db.tesseract.json").is_file()
    ocr.tesseract_version.cache_clear()
