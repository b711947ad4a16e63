"""Error codes (data) and the exception tree (signals) of the engine.

Owns: the one ``ErrorCode`` Literal every envelope's ``error`` field draws
from, and the ``ChunknavError`` exception tree. Imports nothing from the rest
of the engine and no face (streamlit, mcp, argparse).

Exception tree::

    ChunknavError                 base; never crosses a tool boundary
    ├── SettingsError (ValueError) a bad setting, named, raised at load
    ├── ExtractError               a file could not be read; .code (an ExtractCode,
    │   │                          set where it is raised), .reason is shown
    │   ├── EncryptedError         password required or wrong
    │   ├── UnsupportedFileError   a file type we do not extract
    │   └── TooLargeError          over a size limit (reason names the setting)
    ├── EmbedError                 carries an ``EmbedFailure`` (classified once
    │                              in engine/embed/, copied everywhere after)
    ├── IndexBusyError             another index run holds the lock
    ├── StoreFaultError            the store failed under a run or a read; ``.code`` is
    │   │                          its class, said in one line by every face
    │   ├── StoreBusyError         the store's writer lock stayed busy (SQLite
    │   │                          "database is locked"); the indexer retries it
    │   │                          (``store-busy``)
    │   ├── StoreUnavailableError  the index cannot be opened, or was lost under a
    │   │                          run (server gone, I/O error): ``index-unavailable``
    │   └── DiskFullError          the disk holding the index is full: ``disk-full``
    ├── RunCancelled               a cancel request reached a file boundary
    ├── PathEscapeError            a filePath that leaves the collection root
    ├── RootRefusedError (ValueError)      a collection root outside
    │                              CHUNKNAV_ALLOWED_ROOTS, ``/`` or a system directory
    ├── CollectionBoundError (ValueError)  the collectionPath is already bound
    │                              to another root (replace it on purpose)
    └── ArchiveError               a portable archive refused before anything is
                                   written; .code: archive-corrupt (truncated,
                                   tampered), archive-model-mismatch, not-found
"""

from typing import Literal

__all__ = [
    "ErrorCode",
    "ERROR_CODES",
    "ExtractReason",
    "ExtractCode",
    "RUN_CODE",
    "WHO_FIXES",
    "ChunknavError",
    "SettingsError",
    "ExtractError",
    "EncryptedError",
    "UnsupportedFileError",
    "TooLargeError",
    "EmbedError",
    "IndexBusyError",
    "StoreFaultError",
    "StoreBusyError",
    "DiskFullError",
    "RunCancelled",
    "ReasonCode",
    "REASON_CODES",
    "FileOutcome",
    "PathEscapeError",
    "StoreUnavailableError",
    "RootRefusedError",
    "CollectionBoundError",
    "ArchiveError",
]

ErrorCode = Literal[
    "embedding-credential-rejected",  # 401/403 from the provider
    "embedding-request-rejected",  # 400/404/422: unknown model, input too long
    "embedding-unavailable",  # 5xx, 429, refused connection, timeout
    "search-not-performed",  # no provider configured
    "embedding-dimension-changed",  # the server's dimension differs from the model's stored vectors
    "index-busy",  # another index run holds the lock
    "index-unavailable",  # the store cannot be opened (bad path, server down)
    "not-found",  # unknown collection / document node
    "invalid-argument",  # a tool argument out of its domain
    "path-escape",  # filePath leaves the collection root
    "store-busy",  # the store's writer lock stayed busy past lock_wait_s
    "disk-full",  # the disk holding the index is full: committed work kept, the run stopped
    "stale-cursor",  # a paging cursor made before an index run changed what it pages through
    # operator actions
    "root-refused",  # a collection root outside CHUNKNAV_ALLOWED_ROOTS or a system directory
    "collection-bound",  # the collectionPath is bound to another root; replace it on purpose
    "archive-corrupt",  # an archive truncated, tampered or damaged: its checksums do not match
    "archive-model-mismatch",  # an archive's model or dimension differs from the index's
]

ERROR_CODES: tuple[str, ...] = ErrorCode.__args__  # type: ignore[attr-defined]

#: Why a document has no text (recorded as ``metadata.reasonCode``; ``get_chunk``
#: and ``read_document`` answer ``found: false`` with it). A failed document
#: records its ``ExtractError.code``; an empty one the code its extractor set in
#: ``ExtractedText.metadata["reasonCode"]`` (else ``no-text``).
ExtractReason = Literal[
    "password-required",  # encrypted, no password configured
    "wrong-password",  # encrypted, the configured password does not open it
    "corrupt",  # the library cannot parse the file
    "unreadable",  # the file cannot be read (permissions, vanished)
    "unsupported",  # no extractor for the suffix
    "binary-content",  # a text suffix on bytes that are not text
    "extractor-error",  # a library bug on this file
    "extract-failed",  # any other failure
    "no-pages",  # a PDF without pages
    "no-text-layer",  # pages without words (scans without OCR)
    "only-whitespace",  # text that is only whitespace
    "empty-file",  # 0 bytes
    "no-text",  # any other document without text
]

# -- file outcomes of an index run -------------------------------------------------
#: Where each entry under a collection root ends after a run.
FileOutcome = Literal["indexed", "unchanged", "failed", "skipped"]

#: Why a file was skipped, failed, or kept as stale (DESIGN.md "Indexing").
ReasonCode = Literal[
    "unreadable",  # EACCES, folder not searchable/listable, I/O error: kept stale if indexed
    "not-a-regular-file",  # FIFO, socket, device
    "symlink-outside-root",  # a symlink resolving outside the collection root
    "symlink-loop",  # a symlink that never resolves (ELOOP)
    "hidden",  # a name starting with "." (file or folder)
    "unsupported-type",  # no extractor for the suffix (or no suffix and bytes that are not text)
    "binary-content",  # a text suffix (.txt, .md) on bytes that are not text: not read as text
    "too-large",  # over max_file_bytes / max_docx_part_bytes / max_pages (named)
    "bad-file-name",  # a name that cannot be stored (escaped form collides)
    "changed-during-read",  # size/mtime/hash moved while the file was extracted
    "corrupt",  # the extractor could not parse the file (truncated, bad zip/XML)
    "encrypted",  # a password is needed or the configured one is wrong
    "extractor-error",  # a library bug on this file (logged with its traceback)
    "gone",  # the file vanished between the walk and the read (ENOENT)
    "root-missing",  # the collection root is not a directory
    "missing",  # the file is gone; its document kept (keep_missing), marked missing
    "ocr-unavailable",  # OCR cannot run (no Tesseract data for any language): OCR text kept stale
    "alias",  # a symlink to a file indexed in the same root: listed as that document's alias
]

REASON_CODES: tuple[str, ...] = ReasonCode.__args__  # type: ignore[attr-defined]

#: Why a file could not be extracted: set where ``ExtractError`` is raised, never
#: read back from its message. A failed document records it as ``reasonCode``.
ExtractCode = Literal[
    "corrupt",  # the library cannot parse the file
    "password-required",  # encrypted, no password configured
    "wrong-password",  # encrypted, the configured password does not open it
    "unreadable",  # the file cannot be read (permissions, vanished, not a regular file)
    "unsupported",  # no extractor for the suffix
    "binary-content",  # a text suffix on bytes that are not text (NULs, control characters)
    "too-large",  # over a size limit
    "extractor-error",  # a library bug on this file, or its worker process died
]

#: The run's reason code (``ReasonCode``, in the summary) of each ``ExtractCode``.
RUN_CODE: dict[ExtractCode, ReasonCode] = {
    "corrupt": "corrupt",
    "password-required": "encrypted",
    "wrong-password": "encrypted",
    "unreadable": "unreadable",
    "unsupported": "unsupported-type",
    "binary-content": "binary-content",
    "too-large": "too-large",
    "extractor-error": "extractor-error",
}

#: Who can act on each code, shown by the GUI and the CLI beside ``message``.
WHO_FIXES: dict[str, str] = {
    "embedding-credential-rejected": "the operator: set a valid EMBED_API_KEY for this endpoint",
    "embedding-request-rejected": "the operator: check EMBED_MODEL / EMBED_URL (the server refused the request)",
    "embedding-unavailable": "the embedding server's owner: it did not answer; retry later",
    "search-not-performed": "the operator: configure EMBED_PROVIDER (local, ollama or openai)",
    "embedding-dimension-changed": "the operator: restore the model that made the stored vectors, or index under a new EMBED_MODEL name",
    "index-busy": "nobody: wait for the running index job to finish",
    "index-unavailable": "the operator: check CHUNKNAV_DB / CHUNKNAV_DSN and that the store is reachable",
    "not-found": "the caller: check the collection or document path",
    "invalid-argument": "the caller: fix the named argument",
    "path-escape": "the caller: filePath must stay inside the collection root",
    "store-busy": "the operator: another process holds the index's writer lock; "
    "wait for it or raise CHUNKNAV_LOCK_WAIT_S",
    "disk-full": "the operator: free space on the disk that holds the index (docs/operations.md says how much "
    "a run needs), then rerun `chunknav index`; searching works meanwhile",
    "stale-cursor": "the caller: repeat the call without 'cursor' (the index changed since the first page)",
    "root-refused": "the operator: choose a directory under CHUNKNAV_ALLOWED_ROOTS (or extend that setting)",
    "collection-bound": "the operator: pick another collection path, or replace the binding on purpose",
    "archive-corrupt": "the operator: export the archive again, or copy it again in full",
    "archive-model-mismatch": "the operator: import into an index configured with the archive's "
    "EMBED_MODEL and dimension (or a fresh one)",
}


class ChunknavError(Exception):
    """Base of every exception the engine raises on purpose."""


class SettingsError(ChunknavError, ValueError):
    """A setting has a bad value; the message names the setting and its source."""


class ExtractError(ChunknavError):
    """A file could not be extracted.

    Args:
        code: why, an ``ExtractCode`` chosen where the error is raised.
        reason: short human reason stored with the failed document
            (e.g. ``"corrupt: cannot open broken document"``); ``str(e)``.

    Attributes:
        code, reason: as given. ``run_code`` is the run's ``ReasonCode``.
    """

    def __init__(self, code: ExtractCode, reason: str):
        super().__init__(reason)
        self.code: ExtractCode = code
        self.reason = reason

    def __reduce__(self) -> tuple[type, tuple[str, str]]:
        # pickled across the extract worker processes with both fields
        return (type(self), (self.code, self.reason))

    @property
    def run_code(self) -> ReasonCode:
        """The reason code the index run reports for this file."""
        return RUN_CODE[self.code]


class EncryptedError(ExtractError):
    """The PDF needs a password that was not configured (code ``password-required``),
    or the configured one is wrong (``wrong-password``)."""


class UnsupportedFileError(ExtractError):
    """The file type has no extractor (code ``unsupported``; skipped and counted, not a failure)."""


class TooLargeError(ExtractError):
    """The file is over a limit (``max_file_bytes``, ``max_docx_part_bytes``,
    ``max_pages``); code ``too-large``, ``reason`` names the limit."""


class EmbedError(ChunknavError):
    """An embedding call failed; ``failure`` is the classified ``EmbedFailure``."""

    def __init__(self, failure):  # failure: engine.embed.EmbedFailure
        super().__init__(failure.message)
        self.failure = failure


class IndexBusyError(ChunknavError):
    """Another index run holds the indexer lock (one indexer at a time)."""


class StoreFaultError(ChunknavError):
    """The store failed under a run or a read, classified where the backend's error was seen
    (``engine.store.sqlite.connections``, ``engine.store.postgres``); ``code`` names the class
    (an ``ErrorCode``), the message what happened. An index run ends on it with its summary's
    ``error`` set and everything committed before it kept."""

    code: ErrorCode = "index-unavailable"


class StoreBusyError(StoreFaultError):
    """The store's writer lock was busy past the backend's timeout (SQLite
    ``database is locked``). The indexer retries with backoff up to
    ``lock_wait_s`` and then ends the run with a saved summary."""

    code: ErrorCode = "store-busy"


class DiskFullError(StoreFaultError):
    """The disk holding the index is full (SQLite ``SQLITE_FULL``, an I/O error with no space
    left, PostgreSQL ``disk_full``); the write was rolled back, earlier commits are kept."""

    code: ErrorCode = "disk-full"


class RunCancelled(ChunknavError):
    """Raised inside the indexer at a file boundary once cancel was requested."""


class PathEscapeError(ChunknavError):
    """A filePath resolves outside its collection root (``..``, absolute, symlink)."""


class StoreUnavailableError(StoreFaultError):
    """The store cannot be opened (unwritable path, corrupt file, server down), or was lost
    under a run (the server went away, a disk I/O error)."""

    code: ErrorCode = "index-unavailable"


class RootRefusedError(ChunknavError, ValueError):
    """A collection root is ``/``, a system directory, or outside
    ``CHUNKNAV_ALLOWED_ROOTS``; the message names the setting."""

    code = "root-refused"


class CollectionBoundError(ChunknavError, ValueError):
    """``add_collection`` of a collectionPath already bound to another root.

    Attributes:
        collection_path: the path asked for.
        current_root: the directory it is bound to now.
        new_root: the directory asked for (real path).
    """

    code = "collection-bound"

    def __init__(self, collection_path: str, current_root: str, new_root: str):
        super().__init__(
            f"collection {collection_path!r} is already bound to {current_root}; "
            f"re-pointing it to {new_root} must be asked for on purpose"
        )
        self.collection_path = collection_path
        self.current_root = current_root
        self.new_root = new_root


class ArchiveError(ChunknavError):
    """A portable archive that cannot be imported, refused before anything is written.

    Attributes:
        code: ``archive-corrupt`` (not an archive, truncated, a checksum that does not
            match), ``archive-model-mismatch`` (its model or dimension differs from the
            index's) or ``not-found`` (no archive there, or no such collection in it).
    """

    def __init__(self, message: str, code: str = "archive-corrupt"):
        super().__init__(message)
        self.code = code
