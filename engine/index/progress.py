"""The one progress of an index run: phases, a byte-weighted bar, files in flight, time left.

Owns: ``RunProgress``, which every pass of a run reports to (through
``RunContext.emit``) and which every face reads: the explorer's Rebuild page
and sidebar (``explorer.jobs.IndexJob`` keeps its last snapshot), the CLI's
progress bar or plain lines, and ``chunknav status`` of another process (the
snapshot is saved in the running run record as ``progress``), and
``progress_line``, the one line every face draws from a snapshot. Imports
nothing from the engine; no face, no store.

A snapshot (each event handed on) keeps the keys of a pass's own event
(``phase``, ``done``, ``total``, ``file``, ``elapsedS``, ``bytesHashed``)
and adds:

- ``phases``: per phase met so far (``walk``, ``hash``, ``extract``,
  ``embed``) ``{"done", "total", "unit"}`` (``unit``: ``files``, ``bytes``
  or ``chunks``), plus ``bytesDone``/``bytesTotal`` for ``extract``;
- ``fraction``: 0..1 of the current phase, weighted by bytes for ``hash``
  and ``extract`` (a 500-page book weighs what it weighs, a 0-byte file
  nothing) and by chunks for ``embed``; None while walking (no total yet);
- ``inFlight``: ``[{"file", "seconds"}]``, the files being extracted now and
  how long each has taken, longest first;
- ``etaS``: seconds left in the current phase once the estimate is stable
  (``ETA_AFTER_S`` into the phase and ``ETA_AFTER_FRACTION`` of it done),
  else None;
- ``refresh``: True on a snapshot handed on again by ``tick`` (no pass event:
  the same counts, fresher ``inFlight``).
"""

from __future__ import annotations

import time
from typing import Any, Callable

__all__ = ["RunProgress", "progress_line", "ETA_AFTER_S", "ETA_AFTER_FRACTION", "PHASES"]

#: The phases of a run, in order.
PHASES = ("walk", "hash", "extract", "embed")
#: Seconds into a phase before a time-left estimate is given.
ETA_AFTER_S = 3.0
#: Fraction of a phase done before a time-left estimate is given.
ETA_AFTER_FRACTION = 0.05

#: A source of the files being extracted now: ``[(label, started)]``, ``started`` a ``time.monotonic()``.
InFlight = Callable[[], list[tuple[str, float]]]


def _none() -> list[tuple[str, float]]:
    return []


class RunProgress:
    """Merge the passes' events into one snapshot and hand it to ``sink``.

    Args:
        sink: called with each snapshot (a face's progress callback), or None.
    """

    def __init__(self, sink: Callable[[dict[str, Any]], None] | None = None):
        self._sink = sink
        self._t0 = time.perf_counter()
        self.in_flight: InFlight = _none
        self._phases: dict[str, dict[str, Any]] = {}
        self._phase_started: dict[str, float] = {}
        self._last: dict[str, Any] = {}

    def update(self, event: dict[str, Any]) -> None:
        """Take one pass event (``Indexer.run`` documents its keys) and hand on the snapshot."""
        phase = str(event.get("phase") or "")
        now = time.monotonic()
        if phase in PHASES:
            self._phase_started.setdefault(phase, now)
            row = self._phases.setdefault(phase, {"done": 0, "total": 0, "unit": _unit(phase)})
            if phase == "hash" and event.get("bytesTotal"):
                row.update(done=int(event.get("bytesHashed") or 0), total=int(event["bytesTotal"]), unit="bytes")
                row["files"] = int(event.get("done") or 0)
            else:
                row.update(done=int(event.get("done") or 0), total=int(event.get("total") or 0))
            if phase == "extract":
                row["bytesDone"] = int(event.get("bytesDone") or 0)
                row["bytesTotal"] = int(event.get("bytesTotal") or 0)
        self._last = dict(event)
        self._hand_on()

    def tick(self) -> None:
        """Hand on the last snapshot again with fresh ``inFlight`` seconds (a long file)."""
        if self._last:
            self._hand_on(refresh=True)

    def snapshot(self) -> dict[str, Any]:
        """The current snapshot (the last event and what this object adds)."""
        out = dict(self._last)
        phase = str(out.get("phase") or "")
        now = time.monotonic()
        out["elapsedS"] = round(time.perf_counter() - self._t0, 3)  # live, on a refresh too
        out["phases"] = {k: dict(v) for k, v in self._phases.items()}
        fraction = _fraction(self._phases.get(phase))
        out["fraction"] = fraction
        out["inFlight"] = [
            {"file": label, "seconds": round(now - started, 1)}
            for label, started in sorted(self.in_flight(), key=lambda x: x[1])
        ]
        eta = None
        since = now - self._phase_started.get(phase, now)
        if fraction is not None and fraction >= ETA_AFTER_FRACTION and since >= ETA_AFTER_S and fraction < 1:
            eta = round(since * (1 - fraction) / fraction, 1)
        out["etaS"] = eta
        return out

    def _hand_on(self, refresh: bool = False) -> None:
        if self._sink is not None:
            snap = self.snapshot()
            if refresh:
                snap["refresh"] = True
            self._sink(snap)


def _unit(phase: str) -> str:
    return {"walk": "files", "hash": "files", "extract": "files", "embed": "chunks"}[phase]


def _fraction(row: dict[str, Any] | None) -> float | None:
    """0..1 of a phase row: by bytes where it has them, else by its count; None without a total."""
    if not row:
        return None
    if row.get("bytesTotal"):
        return min(1.0, row["bytesDone"] / row["bytesTotal"])
    if row.get("total"):
        return min(1.0, row["done"] / row["total"])
    return None


def _mb(n: float) -> str:
    return f"{n / 1e6:.1f} MB" if n < 1e9 else f"{n / 1e9:.2f} GB"


def _duration(s: float) -> str:
    s = int(round(s))
    return (
        f"{s} s" if s < 90 else f"{s // 60} min {s % 60:02d} s" if s < 5400 else f"{s // 3600} h {s // 60 % 60:02d} min"
    )


def progress_line(p: dict, bar_width: int = 0) -> str:
    """A progress snapshot (``engine.index.progress``) as one line: the phase, a bar of
    ``bar_width`` characters (0: none) weighted by bytes or chunks, its counts, the time
    taken and left, and the files being read with how long each has taken."""
    phase = str(p.get("phase") or "")
    row = (p.get("phases") or {}).get(phase) or {}
    fraction = p.get("fraction")
    parts = [f"{phase:<7}"]
    if bar_width:
        filled = int(bar_width * (fraction or 0))
        parts.append(f"[{'#' * filled}{'.' * (bar_width - filled)}]")
    if fraction is not None:
        parts.append(f"{fraction * 100:3.0f}%")
    if phase == "walk":
        parts.append(f"{p.get('done', 0)} found")
    elif phase == "hash":
        parts.append(
            f"{row.get('files', p.get('done', 0))}/{p.get('total', 0)} files, {_mb(row.get('done', 0))} hashed"
        )
    elif phase == "extract":
        parts.append(f"{p.get('done', 0)}/{p.get('total', 0)} files")
        if row.get("bytesTotal"):
            parts.append(f"{_mb(row.get('bytesDone', 0))} of {_mb(row['bytesTotal'])}")
    elif phase == "embed":
        parts.append(f"{p.get('done', 0)}/{p.get('total', 0)} chunks")
    parts.append(f"{_duration(float(p.get('elapsedS') or 0))}")
    if p.get("etaS") is not None:
        parts.append(f"about {_duration(float(p['etaS']))} left")
    line = " ".join(parts)
    flight = p.get("inFlight") or []
    if flight:
        line += "; reading " + ", ".join(f"{f['file']} ({f['seconds']:.0f} s)" for f in flight[:3])
        if len(flight) > 3:
            line += f" and {len(flight) - 3} more"
    return line
