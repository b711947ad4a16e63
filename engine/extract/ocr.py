"""OCR of pages without a text layer: Tesseract through PyMuPDF, words in the displayed-page frame.

Owns: ``OcrSettings`` (mode, languages, DPI), finding Tesseract and its
language data (``TESSDATA_PREFIX`` or ``pymupdf.get_tessdata()``),
``tesseract_version`` (part of the hash gate), ``needs_ocr`` (which pages
``auto`` OCRs), ``ocr_page`` (one page -> PyMuPDF word tuples + mean word
confidence) and ``tesseract_output`` (what Tesseract printed for that page: it goes
to the file's notes, never onto the terminal). Imports nothing from the engine; ``pymupdf`` lazily. Never a
face, a store or HTTP.

Frame: the page is rendered as displayed (``page.get_pixmap``: /Rotate and
CropBox applied by MuPDF, exactly the image ``engine.render`` draws), that
pixmap is OCR'd (``Pixmap.pdfocr_tobytes``, MuPDF's built-in Tesseract), and
the words come back in *displayed* PDF points (pixels / zoom). So an OCR'd
word's ``Bbox`` is ``x / page.rect.width``, ``y / page.rect.height``: no
rotation matrix is applied to them (they are already upright).

Confidence: MuPDF's OCR does not report it; when the ``tesseract`` program
is installed it reads the same pixmap (TSV output) in a parallel process and
the page's mean word confidence (0..100, Tesseract's scale) is recorded;
without the program it is None.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import shutil
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

if TYPE_CHECKING:
    import subprocess

__all__ = [
    "OcrSettings",
    "OCR_OFF",
    "tesseract_version",
    "tessdata_dir",
    "ocr_unavailable",
    "resolve_languages",
    "languages_without_data",
    "needs_ocr",
    "orientation",
    "ocr_page",
    "tesseract_output",
    "ocr_chunk_metadata",
    "OCR_INSTALL_HINT",
]

log = logging.getLogger(__name__)

#: What to install when OCR is unavailable (Debian / Ubuntu).
OCR_INSTALL_HINT = "apt-get install tesseract-ocr tesseract-ocr-eng"
#: Seconds the confidence process may take for one page before it is abandoned.
_TSV_TIMEOUT_S = 120


@dataclass(frozen=True, slots=True)
class OcrSettings:
    """How pages without a text layer are read.

    Attributes:
        mode: ``"auto"`` (OCR a page with no words that shows an image),
            ``"off"`` or ``"force"`` (OCR every page; its native words are replaced).
        languages: ``"+"``-joined Tesseract language codes (``"eng+deu"``).
        dpi: render resolution for OCR, dots per inch.
    """

    mode: str = "auto"
    languages: str = "eng"
    dpi: int = 300


OCR_OFF = OcrSettings(mode="off")


def tessdata_dir() -> str | None:
    """Tesseract's language-data folder (``TESSDATA_PREFIX``, else where
    ``pymupdf.get_tessdata()`` finds it), or None when there is none."""
    try:
        import pymupdf

        found = pymupdf.get_tessdata()
    except Exception:  # RuntimeError: no tessdata folder found
        return None
    return found if found and Path(found).is_dir() else None


#: Seconds a ``tesseract_version`` answer saved beside the index is trusted.
_VERSION_CACHE_MAX_AGE_S = 24 * 3600


@functools.lru_cache(maxsize=4)
def tesseract_version(cache_path: str | None = None) -> str | None:
    """First line of ``tesseract --version`` (``"tesseract 5.3.0"``), or
    ``"mupdf-tesseract"`` when only language data is present (MuPDF's own
    Tesseract still reads it), or None without language data. Cached: one
    process per interpreter.

    Args:
        cache_path: a JSON file (beside the index: ``<db>.tesseract.json``)
            holding the last answer with what it depended on: the
            ``TESSDATA_PREFIX`` value and the ``tesseract`` program found on
            ``PATH`` (path, size, mtime, inode). While those are unchanged, the
            language-data folder it named still exists and the answer is under
            a day old, it is used as is: finding the language data and asking
            the version cost two subprocesses and the PyMuPDF import (~90 ms,
            on every index run: the version is part of the hash gate). None:
            always ask.
    """
    if cache_path is None:
        return _ask_tesseract_version()[1]
    import json
    import time

    key = _tesseract_fingerprint()
    try:
        with open(cache_path, encoding="utf-8") as f:
            saved = json.load(f)
        if (
            saved.get("key") == key
            and 0 <= time.time() - float(saved["at"]) < _VERSION_CACHE_MAX_AGE_S
            and (saved["tessdata"] is None or Path(saved["tessdata"]).is_dir())
        ):
            return saved["version"]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    tessdata, version = _ask_tesseract_version()
    try:
        tmp = f"{cache_path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({"key": key, "at": time.time(), "tessdata": tessdata, "version": version}, f)
        os.replace(tmp, cache_path)
    except OSError:  # a read-only index folder: ask again next time
        pass
    return version


def _tesseract_fingerprint() -> list[Any]:
    """What ``tesseract_version``'s answer depends on, cheaply (no subprocess)."""
    exe = shutil.which("tesseract")
    stat: list[int] | None = None
    if exe:
        try:
            st = os.stat(exe)
            stat = [st.st_size, st.st_mtime_ns, st.st_ino]
        except OSError:
            pass
    return [os.environ.get("TESSDATA_PREFIX"), exe, stat]


@functools.lru_cache(maxsize=1)
def _ask_tesseract_version() -> tuple[str | None, str | None]:
    """``(tessdata_dir(), version)``, asking the system once per process (every
    index file of the process then shares the answer; the file cache is for new processes)."""
    data = tessdata_dir()
    if data is None:
        return None, None
    return data, _version_line()


def _version_line() -> str:
    import subprocess  # here, not at import: every index run imports this module (~2 ms)

    exe = shutil.which("tesseract")
    if exe:
        try:
            out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=20)
            line = (out.stdout or out.stderr).strip().splitlines()
            if line:
                return line[0].strip()
        except (OSError, subprocess.SubprocessError):
            pass
    return "mupdf-tesseract"


def ocr_unavailable(languages: str) -> str | None:
    """Why OCR cannot run with all of ``languages`` (a note), or None when it can."""
    data = tessdata_dir()
    if data is None:
        return f"OCR unavailable: Tesseract language data not found (install: {OCR_INSTALL_HINT})"
    missing = _missing(languages, data)
    if missing:
        return f"OCR unavailable: no Tesseract data for {', '.join(missing)} in {data} (install: {_packages(missing)})"
    return None


def _missing(languages: str, data: str) -> tuple[str, ...]:
    return tuple(lang for lang in languages.split("+") if not (Path(data) / f"{lang}.traineddata").is_file())


def _packages(missing: tuple[str, ...]) -> str:
    return "apt-get install " + " ".join(f"tesseract-ocr-{m.replace('_', '-').lower()}" for m in missing)


def resolve_languages(settings: OcrSettings) -> tuple[OcrSettings | None, str | None]:
    """The languages OCR can read with now.

    Returns:
        ``(usable, note)``: ``usable`` is ``settings`` with ``languages``
        narrowed to those whose ``<lang>.traineddata`` is installed (``settings``
        itself when all are), None when none is (or no language data is found
        at all); ``note`` is None when nothing is missing, else
        ``"OCR languages without Tesseract data: deu (install: apt-get install
        tesseract-ocr-deu); read with eng"`` when some are usable, or the
        ``ocr_unavailable`` note when none is.
    """
    data = tessdata_dir()
    if data is None:
        return None, ocr_unavailable(settings.languages)
    missing = _missing(settings.languages, data)
    if not missing:
        return settings, None
    usable = [lang for lang in settings.languages.split("+") if lang not in missing]
    if not usable:
        return None, ocr_unavailable(settings.languages)
    narrowed = OcrSettings(settings.mode, "+".join(usable), settings.dpi)
    return narrowed, (
        f"OCR languages without Tesseract data: {', '.join(missing)} "
        f"(install: {_packages(missing)}); read with {narrowed.languages}"
    )


@functools.lru_cache(maxsize=8)
def languages_without_data(languages: str, cache_path: str | None = None) -> tuple[str, ...]:
    """Which of ``languages`` (``"eng+deu"``) have no ``.traineddata`` in the
    language-data folder (``()`` when there is no folder at all: then
    ``tesseract_version`` is None). Part of the hash gate
    (``engine.index.gate.settings_key``), so installing a missing language re-reads the
    scans. Cached per process; ``cache_path`` as for ``tesseract_version``
    (the folder named there is used while that answer is trusted)."""
    data: str | None = None
    if cache_path:
        import json

        try:
            with open(cache_path, encoding="utf-8") as f:
                data = json.load(f).get("tessdata")
        except (OSError, ValueError, AttributeError):
            data = None
        if data is not None and not Path(data).is_dir():
            data = None
    if data is None:
        data = _ask_tesseract_version()[0]
    return _missing(languages, data) if data else ()


def needs_ocr(page: Any, native_words: int, settings: OcrSettings) -> bool:
    """Whether ``page`` is OCR'd: ``force`` always, ``auto`` when it has no
    native word and shows at least one image (a scan), ``off`` never."""
    if settings.mode == "force":
        return True
    if settings.mode != "auto" or native_words:
        return False
    try:
        return bool(page.get_images()) or bool(page.get_image_info())
    except Exception:
        return False


def orientation(page: Any, settings: OcrSettings) -> int:
    """Degrees (0, 90, 180, 270) to turn the displayed page so its text stands
    upright, from Tesseract's orientation detection (``--psm 0``, needs the
    ``tesseract`` program and ``osd.traineddata``) on a <= 150 dpi rendering;
    0 when unknown or not confident (orientation confidence < 2)."""
    import subprocess

    import pymupdf

    exe, data = shutil.which("tesseract"), tessdata_dir()
    if not exe or not data or not (Path(data) / "osd.traineddata").is_file():
        return 0
    dpi = min(settings.dpi, 150)
    pix = page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY)
    env = {**os.environ, "TESSDATA_PREFIX": data, "OMP_THREAD_LIMIT": "1"}
    try:
        out = subprocess.run(
            [exe, "-", "-", "--psm", "0", "--dpi", str(dpi)],
            input=pix.tobytes("png"),
            capture_output=True,
            timeout=_TSV_TIMEOUT_S,
            env=env,
        ).stdout.decode("utf-8", "replace")
    except (OSError, subprocess.SubprocessError):
        return 0
    found = dict(line.split(":", 1) for line in out.splitlines() if ":" in line)
    try:
        turn = int(found.get("Rotate", "0").strip()) % 360
        confident = float(found.get("Orientation confidence", "0").strip()) >= 2.0
    except ValueError:
        return 0
    return turn if confident and turn in (90, 180, 270) else 0


#: Distinct lines of Tesseract's own output kept per page (the rest are counted).
TESSERACT_LINES = 3
_said = threading.local()
#: One capture of fd 2 at a time in a process (fd 2 is shared by every thread; extraction
#: workers are processes, so OCR in different workers does not wait on this).
_capture_lock = threading.Lock()


@contextlib.contextmanager
def _capture_stderr() -> Iterator[list[str]]:
    """Tesseract's output while MuPDF runs it (it writes to file descriptor 2 from C, e.g.
    ``Estimating resolution as 301``) into the list yielded, not onto the terminal: fd 2 is
    pointed at a temporary file for the call and restored after, even on an error."""
    import tempfile

    lines: list[str] = []
    with _capture_lock:
        try:
            sys.stderr.flush()
            saved = os.dup(2)
        except (OSError, ValueError):  # no fd 2 to redirect: nothing to capture
            yield lines
            return
        with tempfile.TemporaryFile() as tmp:
            os.dup2(tmp.fileno(), 2)
            try:
                yield lines
            finally:
                os.dup2(saved, 2)
                os.close(saved)
                tmp.seek(0)
                text = tmp.read(64 << 10).decode("utf-8", "replace")
                lines.extend(line.strip() for line in text.splitlines() if line.strip())


def tesseract_output() -> list[str]:
    """What Tesseract printed during this thread's last ``ocr_page`` call (distinct lines,
    at most ``TESSERACT_LINES``, then a count of the rest), for the file's notes; cleared."""
    lines: list[str] = getattr(_said, "lines", [])
    _said.lines = []
    distinct = list(dict.fromkeys(lines))
    if len(distinct) > TESSERACT_LINES:
        distinct = distinct[:TESSERACT_LINES] + [f"and {len(distinct) - TESSERACT_LINES} more lines"]
    return distinct


def ocr_page(page: Any, settings: OcrSettings, flags: int) -> tuple[list[tuple[Any, ...]], float | None, int]:
    """OCR one page as displayed (turned upright first when its text is not).

    Args:
        page: a PyMuPDF page.
        settings: languages and DPI.
        flags: PyMuPDF text flags for the word list (as for native words).

    Returns:
        ``(words, mean_confidence, turned)``: PyMuPDF word tuples ``(x0, y0,
        x1, y1, word, block, line, word_no)`` in *displayed* page points
        (origin the displayed top-left, rotation and CropBox applied; a word
        read on a turned image is mapped back, so its box lies on its ink as
        displayed), the mean Tesseract word confidence 0..100 (None without
        the ``tesseract`` program or when it found no word), and the degrees
        the image was turned for reading (``orientation``).

    Raises:
        RuntimeError: MuPDF's OCR failed on this page (the caller notes it).
    """
    import pymupdf

    zoom = settings.dpi / 72.0
    turned = orientation(page, settings)
    mat = pymupdf.Matrix(zoom, zoom).prerotate(turned)
    pix = page.get_pixmap(matrix=mat, colorspace=pymupdf.csRGB, alpha=False)
    tsv = _start_tsv(pix, settings)
    try:
        with _capture_stderr() as said:  # Tesseract's own lines go to the notes, not the terminal
            ocr_bytes = pix.pdfocr_tobytes(compress=False, language=settings.languages, tessdata=tessdata_dir())
        _said.lines = said
        ocr_pdf = pymupdf.open("pdf", ocr_bytes)
        try:
            ocr = ocr_pdf[0]
            scale = pix.width / ocr.rect.width if ocr.rect.width else 1.0
            # OCR page points -> pixels -> displayed points: undo the origin shift
            # of the rendered (turned) rect, then the zoom and turn.
            shown = page.rect * mat
            back = pymupdf.Matrix(scale, scale) * pymupdf.Matrix(1, 0, 0, 1, shown.x0, shown.y0) * ~mat
            tp = ocr.get_textpage(flags=flags, matrix=back)
            words = ocr.get_text("words", textpage=tp, flags=flags)
        finally:
            ocr_pdf.close()
    except BaseException:
        _stop(tsv)
        raise
    if turned:  # a textpage matrix with a turn keeps corner order; make the boxes proper again
        words = [(min(w[0], w[2]), min(w[1], w[3]), max(w[0], w[2]), max(w[1], w[3]), *w[4:]) for w in words]
    return words, _mean_confidence(tsv), turned


def _start_tsv(pix: Any, settings: OcrSettings) -> subprocess.Popen | None:
    import subprocess

    exe = shutil.which("tesseract")
    if not exe:
        return None
    env = dict(os.environ)
    data = tessdata_dir()
    if data:
        env["TESSDATA_PREFIX"] = data
    env.setdefault("OMP_THREAD_LIMIT", "1")
    try:
        proc = subprocess.Popen(
            [exe, "-", "-", "--dpi", str(settings.dpi), "-l", settings.languages, "tsv"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
    except OSError:
        return None
    png = pix.tobytes("png")
    try:
        assert proc.stdin is not None
        proc.stdin.write(png)
        proc.stdin.close()
    except OSError:
        _stop(proc)
        return None
    return proc


def _stop(proc: subprocess.Popen | None) -> None:
    if proc is not None and proc.poll() is None:
        proc.kill()
        proc.wait()


def _mean_confidence(proc: subprocess.Popen | None) -> float | None:
    import subprocess

    if proc is None:
        return None
    try:
        assert proc.stdout is not None
        out = proc.stdout.read()
        proc.wait(timeout=_TSV_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError):
        _stop(proc)
        return None
    confs = []
    for line in out.decode("utf-8", "replace").splitlines()[1:]:
        cols = line.split("\t")
        if len(cols) >= 12 and cols[0] == "5" and cols[11].strip():
            try:
                c = float(cols[10])
            except ValueError:
                continue
            if c >= 0:
                confs.append(c)
    return round(sum(confs) / len(confs), 1) if confs else None


def ocr_chunk_metadata(regions: Any, ocr_pages: dict[int, float | None]) -> dict[str, Any]:
    """Chunk metadata for a window whose ``regions`` touch OCR'd pages:
    ``{"ocr": True, "ocrPages": [page, ...], "ocrConfidence": {"<page>": 0..100 or None}}``;
    {} when none does (``ocr_pages``: OCR'd page -> mean word confidence)."""
    if not ocr_pages:
        return {}
    pages = sorted({r.page for r in regions if r.page in ocr_pages})
    if not pages:
        return {}
    return {"ocr": True, "ocrPages": pages, "ocrConfidence": {str(p): ocr_pages[p] for p in pages}}
