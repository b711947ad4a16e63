"""Settings from the environment and ``chunknav.toml``, in one place.

Owns: every setting's declaration (name, env variable, default, unit, help)
and the frozen ``Settings`` validated at load. No other module reads
``os.environ`` for settings. Imports no face.

Precedence (highest first): explicit overrides passed to ``load_settings``
(CLI flags), environment variables, ``chunknav.toml`` (``[chunknav]`` table,
keys = field names) in the working directory or ``CHUNKNAV_CONFIG``, defaults.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from engine.errors import SettingsError
from engine.secrets import register, register_url

__all__ = ["Setting", "SETTINGS", "Settings", "load_settings", "EXTRACTOR_VERSION"]

#: Bumped whenever extraction output changes; part of the hash gate (a file indexed under
#: another version is read again). "3": regions with line rectangles (``Region.rects``),
#: detected text encodings, complete .docx, HTML/EPUB/..., OCR, whitespace-only files empty.
#: "4": vertical CJK columns read as lines, binary bytes under a text suffix fail ``binary-content``.
EXTRACTOR_VERSION = "4"


@dataclass(frozen=True, slots=True)
class Setting:
    """One declared setting: field name, env variable, default, unit, help, type."""

    name: str
    env: str
    default: Any
    unit: str
    help: str
    type: type


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "db", "CHUNKNAV_DB", ".chunknav/index.db", "path", "SQLite index file (':memory:' for a throwaway index)", str
    ),
    Setting(
        "dsn",
        "CHUNKNAV_DSN",
        "",
        "URL",
        "postgresql://... selects the Postgres + pgvector store instead of SQLite",
        str,
    ),
    Setting(
        "chunk_size", "CHUNKNAV_CHUNK_SIZE", 1000, "characters", "window length; changing it re-chunks every file", int
    ),
    Setting(
        "chunk_overlap",
        "CHUNKNAV_CHUNK_OVERLAP",
        150,
        "characters",
        "characters shared by neighbouring windows (step = size - overlap)",
        int,
    ),
    Setting(
        "embed_provider",
        "EMBED_PROVIDER",
        "local",
        "name",
        "local (in-process model, see EMBED_MODEL), ollama, openai, auto (probe the wire format) or none",
        str,
    ),
    Setting(
        "embed_url", "EMBED_URL", "", "URL", "embedding server base URL (ollama default http://127.0.0.1:11434)", str
    ),
    Setting(
        "embed_api_key",
        "EMBED_API_KEY",
        "",
        "secret",
        "bearer key for the openai wire format; never logged or shown",
        str,
    ),
    Setting(
        "embed_model",
        "EMBED_MODEL",
        "",
        "name",
        "embedding model (local: all-MiniLM-L6-v2 by default, or l2_supercat_256, WordLlama, fast)",
        str,
    ),
    Setting(
        "embed_dim",
        "EMBED_DIM",
        0,
        "dimensions",
        "expected vector dimension; 0 = the model's known dimension (local: 384, WordLlama 256)",
        int,
    ),
    Setting("embed_batch", "EMBED_BATCH", 32, "texts", "texts per embedding request", int),
    Setting(
        "embed_threads",
        "EMBED_THREADS",
        0,
        "threads",
        "threads of the local all-MiniLM-L6-v2 model; 0 = every core",
        int,
    ),
    Setting("embed_timeout_s", "EMBED_TIMEOUT", 30.0, "seconds", "timeout of one embedding HTTP request", float),
    Setting(
        "embed_retries",
        "EMBED_RETRIES",
        3,
        "attempts",
        "extra attempts for 429/5xx/timeouts, with backoff (Retry-After honoured)",
        int,
    ),
    Setting(
        "embed_max_input_chars",
        "EMBED_MAX_INPUT_CHARS",
        0,
        "characters",
        "longest text the model accepts; 0 = the provider's known limit",
        int,
    ),
    # -- OCR of pages without a text layer --
    Setting(
        "ocr",
        "CHUNKNAV_OCR",
        "auto",
        "mode",
        "auto (OCR pages without words, or covered by an image with no words), off, or force "
        "(OCR every page of PDFs and image formats); needs Tesseract (apt: tesseract-ocr)",
        str,
    ),
    Setting(
        "ocr_languages",
        "CHUNKNAV_OCR_LANGUAGES",
        "eng",
        "Tesseract languages",
        "'+'-joined Tesseract language codes, e.g. eng+deu (apt: tesseract-ocr-<lang>)",
        str,
    ),
    Setting(
        "ocr_dpi", "CHUNKNAV_OCR_DPI", 300, "dots per inch", "resolution pages are rendered at for OCR (72..1200)", int
    ),
    # -- file limits and locks of an index run --
    Setting(
        "max_file_bytes",
        "CHUNKNAV_MAX_FILE_BYTES",
        256 * 1024 * 1024,
        "bytes",
        "largest file an index run reads; a bigger one is skipped as too-large; 0 = no limit",
        int,
    ),
    Setting(
        "max_docx_part_bytes",
        "CHUNKNAV_MAX_DOCX_PART_BYTES",
        128 * 1024 * 1024,
        "bytes",
        "largest decompressed part of a .docx (zip bombs are refused before inflating); 0 = no limit",
        int,
    ),
    Setting(
        "max_pages",
        "CHUNKNAV_MAX_PAGES",
        5000,
        "pages",
        "most pages of a PDF an index run extracts; more is skipped as too-large; 0 = no limit",
        int,
    ),
    Setting(
        "lock_wait_s",
        "CHUNKNAV_LOCK_WAIT_S",
        120.0,
        "seconds",
        "how long an index run retries a busy writer lock (with backoff) before it stops",
        float,
    ),
    Setting(
        "keep_missing",
        "CHUNKNAV_KEEP_MISSING",
        False,
        "flag",
        "an index run keeps the documents whose file is gone (marked missing, still searchable) "
        "instead of removing them (true/false; chunknav index --keep-missing)",
        bool,
    ),
    Setting(
        "stat_gate",
        "CHUNKNAV_STAT_GATE",
        True,
        "flag",
        "an index run takes a file's content hash from its stored row when size, mtime and ctime "
        "are those it was stored with (false: read and hash every file)",
        bool,
    ),
    # -- MCP over HTTP (chunknav mcp --http) --
    Setting(
        "mcp_token",
        "CHUNKNAV_MCP_TOKEN",
        "",
        "secret",
        "bearer token every request to 'chunknav mcp --http' must carry (Authorization: Bearer ...); "
        "required for any non-loopback address; never logged or shown",
        str,
    ),
    # -- operator safety: who may reach the explorer, where collections may live
    Setting(
        "allowed_roots",
        "CHUNKNAV_ALLOWED_ROOTS",
        "",
        "paths",
        "directories collection roots may live under, separated by ':' (os.pathsep); empty = the "
        "working directory's tree and the user's home; '/' and system directories are always refused",
        str,
    ),
    Setting(
        "access_token",
        "CHUNKNAV_ACCESS_TOKEN",
        "",
        "secret",
        "token the explorer asks for once per browser session; required to bind a non-loopback address",
        str,
    ),
    Setting(
        "read_only",
        "CHUNKNAV_READ_ONLY",
        False,
        "flag",
        "explorer without Rebuild and collection changes (true/false)",
        bool,
    ),
    # -- page rendering --
    Setting(
        "renderer",
        "CHUNKNAV_RENDERER",
        "pymupdf",
        "name",
        "page images for the Source view: pymupdf (same library as extraction, fastest) "
        "or poppler (pdftoppm through pdf2image; needs Debian poppler-utils)",
        str,
    ),
    # -- performance
    Setting(
        "extract_workers",
        "CHUNKNAV_EXTRACT_WORKERS",
        0,
        "processes",
        "worker processes extracting files in parallel; 0 = one per core while the cores are free, "
        "1 = in the indexing process only",
        int,
    ),
    # -- large vector scans
    Setting(
        "vector_scan",
        "CHUNKNAV_VECTOR_SCAN",
        "auto",
        "mode",
        "SQLite vector search: auto (int8 scan + float32 rescoring for full scans of at least "
        "vector_int8_min_rows vectors, exact float32 otherwise), exact (always float32), or int8 "
        "(every full scan); scoped scans are always exact",
        str,
    ),
    Setting(
        "vector_int8_min_rows",
        "CHUNKNAV_VECTOR_INT8_MIN_ROWS",
        200_000,
        "vectors",
        "vectors of one model from which vector_scan=auto uses the int8 scan for full scans",
        int,
    ),
)

_BY_NAME = {s.name: s for s in SETTINGS}


@dataclass(frozen=True, slots=True)
class Settings:
    """Validated settings; see ``SETTINGS`` for units and help of each field."""

    db: str = ".chunknav/index.db"
    dsn: str = ""
    chunk_size: int = 1000
    chunk_overlap: int = 150
    embed_provider: str = "local"
    embed_url: str = ""
    embed_api_key: str = ""
    embed_model: str = ""
    embed_dim: int = 0
    embed_batch: int = 32
    embed_threads: int = 0
    embed_timeout_s: float = 30.0
    embed_retries: int = 3
    embed_max_input_chars: int = 0
    ocr: str = "auto"
    ocr_languages: str = "eng"
    ocr_dpi: int = 300
    max_file_bytes: int = 256 * 1024 * 1024
    max_docx_part_bytes: int = 128 * 1024 * 1024
    max_pages: int = 5000
    lock_wait_s: float = 120.0
    keep_missing: bool = False
    stat_gate: bool = True
    mcp_token: str = ""
    allowed_roots: str = ""
    access_token: str = ""
    read_only: bool = False
    renderer: str = "pymupdf"
    extract_workers: int = 0
    vector_scan: str = "auto"
    vector_int8_min_rows: int = 200_000

    @property
    def chunk_step(self) -> int:
        """Characters between window starts: size - overlap."""
        return self.chunk_size - self.chunk_overlap

    def validate(self) -> Settings:
        """Check ranges; raises ``SettingsError`` naming the setting and its env variable."""
        if self.chunk_size <= 0:
            raise SettingsError(f"chunk_size (CHUNKNAV_CHUNK_SIZE) must be > 0, got {self.chunk_size}")
        if not 0 <= self.chunk_overlap < self.chunk_size:
            raise SettingsError(
                f"chunk_overlap (CHUNKNAV_CHUNK_OVERLAP) must be in 0..chunk_size-1, got {self.chunk_overlap}"
            )
        if self.embed_provider not in ("local", "ollama", "openai", "auto", "none"):
            raise SettingsError(
                f"embed_provider (EMBED_PROVIDER) must be local, ollama, openai, auto or none, "
                f"got {self.embed_provider!r}"
            )
        if self.embed_batch <= 0:
            raise SettingsError(f"embed_batch (EMBED_BATCH) must be > 0, got {self.embed_batch}")
        if self.embed_timeout_s <= 0:
            raise SettingsError(f"embed_timeout_s (EMBED_TIMEOUT) must be > 0 seconds, got {self.embed_timeout_s}")
        if self.embed_retries < 0:
            raise SettingsError(f"embed_retries (EMBED_RETRIES) must be >= 0, got {self.embed_retries}")
        if self.embed_threads < 0:
            raise SettingsError(f"embed_threads (EMBED_THREADS) must be >= 0, got {self.embed_threads}")
        if self.embed_dim < 0:
            raise SettingsError(f"embed_dim (EMBED_DIM) must be >= 0, got {self.embed_dim}")
        if self.ocr not in ("auto", "off", "force"):
            raise SettingsError(f"ocr (CHUNKNAV_OCR) must be auto, off or force, got {self.ocr!r}")
        if not 72 <= self.ocr_dpi <= 1200:
            raise SettingsError(f"ocr_dpi (CHUNKNAV_OCR_DPI) must be 72..1200 dots per inch, got {self.ocr_dpi}")
        if not self.ocr_languages or not all(p.replace("_", "").isalnum() for p in self.ocr_languages.split("+")):
            raise SettingsError(
                f"ocr_languages (CHUNKNAV_OCR_LANGUAGES) must be '+'-joined Tesseract codes like eng+deu, "
                f"got {self.ocr_languages!r}"
            )
        for name in ("max_file_bytes", "max_docx_part_bytes", "max_pages", "lock_wait_s"):
            if getattr(self, name) < 0:
                raise SettingsError(f"{name} ({_BY_NAME[name].env}) must be >= 0, got {getattr(self, name)}")
        if self.renderer not in ("pymupdf", "poppler"):
            raise SettingsError(f"renderer (CHUNKNAV_RENDERER) must be pymupdf or poppler, got {self.renderer!r}")
        if self.extract_workers < 0:
            raise SettingsError(f"extract_workers (CHUNKNAV_EXTRACT_WORKERS) must be >= 0, got {self.extract_workers}")
        if self.vector_scan not in ("auto", "exact", "int8"):
            raise SettingsError(
                f"vector_scan (CHUNKNAV_VECTOR_SCAN) must be auto, exact or int8, got {self.vector_scan!r}"
            )
        if self.vector_int8_min_rows < 0:
            raise SettingsError(
                f"vector_int8_min_rows (CHUNKNAV_VECTOR_INT8_MIN_ROWS) must be >= 0, got {self.vector_int8_min_rows}"
            )
        if self.dsn and not self.dsn.startswith(("postgresql://", "postgres://")):
            raise SettingsError(f"dsn (CHUNKNAV_DSN) must start with postgresql://, got {self.dsn[:20]!r}")
        return self


def _coerce(setting: Setting, value: Any, source: str) -> Any:
    try:
        if setting.type is bool:
            return str(value).lower() in ("1", "true", "yes", "on")
        return setting.type(value)
    except (TypeError, ValueError):
        raise SettingsError(
            f"{setting.name} ({setting.env}) from {source} must be {setting.type.__name__} "
            f"in {setting.unit}, got {value!r}"
        ) from None


def load_settings(
    overrides: dict[str, Any] | None = None,
    environ: dict[str, str] | None = None,
    toml_path: str | os.PathLike[str] | None = None,
) -> Settings:
    """Build validated ``Settings``.

    Args:
        overrides: field name -> value (CLI flags); None values are ignored.
        environ: the environment to read (default ``os.environ``).
        toml_path: a ``chunknav.toml``; default ``CHUNKNAV_CONFIG`` or
            ``./chunknav.toml`` when present.

    Raises:
        SettingsError: a value of the wrong type or out of range, naming the
            setting, its env variable and where the value came from.
    """
    env = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    path = Path(toml_path or env.get("CHUNKNAV_CONFIG") or "chunknav.toml")
    if path.is_file():
        import tomllib  # only when there is a file to read (~4 ms of imports otherwise)

        try:
            table = tomllib.loads(path.read_text("utf-8")).get("chunknav", {})
        except tomllib.TOMLDecodeError as e:
            raise SettingsError(f"{path}: not valid TOML: {e}") from None
        for key, value in table.items():
            if key not in _BY_NAME:
                raise SettingsError(f"{path}: unknown setting {key!r} (known: {', '.join(_BY_NAME)})")
            values[key] = _coerce(_BY_NAME[key], value, str(path))
    for s in SETTINGS:
        if s.env in env and env[s.env] != "":
            values[s.name] = _coerce(s, env[s.env], f"${s.env}")
    for key, value in (overrides or {}).items():
        if value is None:
            continue
        if key not in _BY_NAME:
            raise SettingsError(f"unknown setting {key!r}")
        values[key] = _coerce(_BY_NAME[key], value, "the command line")
    settings = Settings(**values).validate()
    register_settings(settings)  # engine.secrets: every face redacts these, in every form
    return settings


def settings_table() -> list[dict[str, Any]]:
    """Declarations as rows (name, env, default, unit, help) for --help, docs and the GUI."""
    return [{"name": s.name, "env": s.env, "default": s.default, "unit": s.unit, "help": s.help} for s in SETTINGS]


assert [f.name for f in fields(Settings)] == [s.name for s in SETTINGS], "declare each setting once"


def register_settings(settings: Any) -> None:
    """Register every secret a ``Settings`` holds: each field whose declared unit
    is ``secret`` (API key, access token, MCP token, …) and the userinfo of
    every URL setting (``EMBED_URL``, ``CHUNKNAV_DSN``)."""
    for s in SETTINGS:
        value = getattr(settings, s.name, None)
        if not isinstance(value, str) or not value:
            continue
        if s.unit == "secret" or any(w in s.name for w in ("token", "password", "api_key", "secret")):
            register(value)
        elif s.unit == "URL":
            register_url(value)
