"""Index runs in a background thread, observable from any Streamlit session.

Owns: ``IndexJob``, the one in-process index run of an Engine (kept in
``st.cache_resource`` by ``explorer/state.py``). Streamlit cannot update the
page from another thread, so the thread only writes a progress snapshot here
and the pages poll it (``st.fragment(run_every=...)``). A second start while
a run is active is refused (``start`` returns False); a run held by another
process (the CLI) ends as ``index-busy``. ``cancel`` asks the run to stop: it
abandons the files being read within seconds (it ends ``done`` with a
``cancelled`` summary).
Imports no Streamlit.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from engine.errors import IndexBusyError, StoreFaultError

__all__ = ["IndexJob"]


class IndexJob:
    """One background index run at a time, with a thread-safe progress snapshot."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._state: dict[str, Any] = {"status": "idle"}
        self._cancel = threading.Event()
        self.runs_started = 0

    def running(self) -> bool:
        """True while a run started here is active."""
        with self._lock:
            return self._state.get("status") == "running"

    def snapshot(self) -> dict[str, Any]:
        """A copy of the state: ``status`` (idle | running | done | busy | error),
        ``force``, ``phase`` (walk | hash | extract | embed), ``done``/``total``
        (files found while walking, total 0; files hashed, with
        ``bytesHashed``; files while extracting; chunks while embedding),
        ``file``, and from ``engine.index.progress`` ``phases``, ``fraction``,
        ``inFlight`` and ``etaS``; ``cancelRequested``, ``startedAt`` (epoch s),
        ``elapsedS``, and at the end ``summary`` or ``error``/``message``."""
        with self._lock:
            out = dict(self._state)
        if out.get("status") == "running":
            out["elapsedS"] = round(time.time() - out["startedAt"], 1)
        return out

    def start(self, engine, force: bool = False, collections: list[str] | None = None) -> bool:
        """Start ``engine.run_index(collections, force)`` in a thread.

        Returns:
            True when a run started; False when one is already active (the
            click is ignored, no second run).
        """
        with self._lock:
            if self._state.get("status") == "running":
                return False
            self.runs_started += 1
            self._cancel = threading.Event()
            self._state = {
                "status": "running",
                "force": force,
                "phase": "start",
                "done": 0,
                "total": 0,
                "file": "",
                "startedAt": time.time(),
                "run": self.runs_started,
            }
            self._thread = threading.Thread(
                target=self._run, args=(engine, force, collections, self._cancel), name="chunknav-index", daemon=True
            )
            self._thread.start()
        return True

    def cancel(self) -> bool:
        """Ask the active run to stop within seconds, abandoning the files being read (what
        it committed stays; its summary says ``cancelled``).

        Returns:
            True when a run was active and is now asked to stop.
        """
        with self._lock:
            if self._state.get("status") != "running":
                return False
            self._state["cancelRequested"] = True
            self._cancel.set()
        return True

    def wait(self, timeout_s: float | None = None) -> bool:
        """Block until the current run ends (tests); True when it ended."""
        t = self._thread
        if t is not None:
            t.join(timeout_s)
            return not t.is_alive()
        return True

    def _progress(self, event: dict[str, Any]) -> None:
        """Keep the run's progress snapshot (``engine.index.progress``: the one progress the
        Rebuild page, the sidebar and ``chunknav status`` show)."""
        with self._lock:
            for k in ("phase", "done", "total", "file", "bytesHashed", "phases", "fraction", "inFlight", "etaS"):
                if k in event:
                    self._state[k] = event[k]

    def _run(self, engine, force: bool, collections: list[str] | None, cancel: threading.Event) -> None:
        try:
            summary = engine.run_index(collections, force=force, on_progress=self._progress, cancel=cancel)
            end = {"status": "done", "summary": summary}
        except IndexBusyError as e:
            end = {"status": "busy", "error": "index-busy", "message": str(e)}
        except StoreFaultError as e:  # the index could not be opened or written: its class, one line
            end = {"status": "error", "error": e.code, "message": str(e)}
        except Exception as e:  # a bug or a bad setting: shown, never swallowed
            end = {"status": "error", "error": type(e).__name__, "message": str(e)}
        with self._lock:
            started = self._state.get("startedAt", time.time())
            self._state.update(end, elapsedS=round(time.time() - started, 1), finishedAt=time.time())
