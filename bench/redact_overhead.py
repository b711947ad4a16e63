"""What the one redaction pass costs every envelope (engine/secrets.py), in one run.

Usage: .venv/bin/python bench/redact_overhead.py

Builds a real index of assets/samples (keyword mode, no embedding), then
times ``redact_obj`` over real envelopes (search_chunks limit 20 and 100,
read_document of the longest sample, index_status) with 0, 5 and 20
registered secrets, against the anchor: ``to_json`` of the same envelope
(what every face pays anyway). Prints medians in ms and the ratio to the anchor.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine import secrets as S  # noqa: E402
from engine.config import Settings  # noqa: E402
from engine.tools.registry import Engine, call_tool, normalise, to_json  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
REPEAT = 30


def _median_ms(fn) -> float:
    times = []
    for _ in range(REPEAT):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def main() -> None:
    tmp = tempfile.mkdtemp(prefix="redact-bench-")
    eng = Engine(Settings(db=os.path.join(tmp, "i.db"), embed_provider="none", allowed_roots=str(REPO)).validate())
    eng.add_collection("Samples", str(REPO / "assets" / "samples"))
    eng.run_index(embed=False)
    envelopes = {
        "search_chunks limit 20": call_tool(
            eng, "search_chunks", {"query": "table data", "scope": "Samples", "mode": "keyword", "limit": 20}
        ),
        "search_chunks limit 100": call_tool(
            eng, "search_chunks", {"query": "the", "scope": "Samples", "mode": "keyword", "limit": 100}
        ),
        "read_document (39k chars)": call_tool(
            eng, "read_document", {"collectionPath": "Samples", "filePath": "pdfplumber-README.md"}
        ),
        "index_status": call_tool(eng, "index_status", {"probe": False}),
    }
    eng.close()
    print(f"{'envelope':<28} {'to_json ms':>10} {'0 secrets':>16} {'5 secrets':>16} {'20 secrets':>16}")
    rows = {}
    for n in (0, 5, 20):
        S._secrets.clear()
        S._pattern = None
        S._literals = ()
        S.register(*[f"secret-{i:02d}-Xy7pQ2wL" for i in range(n)])
        for name, env in envelopes.items():
            rows.setdefault(name, {})[n] = _median_ms(lambda: S.redact_obj(env))
    for name, env in envelopes.items():
        anchor = _median_ms(lambda: to_json(normalise(env)))
        cells = " ".join(f"{rows[name][n]:>7.3f} ({rows[name][n] / anchor:>4.1f}x)" for n in (0, 5, 20))
        print(f"{name:<28} {anchor:>10.3f} {cells}")


if __name__ == "__main__":
    main()
