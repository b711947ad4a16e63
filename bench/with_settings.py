"""Run a bench with some ``Settings`` fields replaced: an A/B of a setting in one command.

Usage::

    .venv/bin/python bench/with_settings.py vector_int8_min_rows=65536 -- bench/search_latency.py --hybrid 100000
    .venv/bin/python bench/with_settings.py vector_int8_min_rows=65536 -- bench/perf_rows.py --only search --chunks 100000

The benches build ``Settings(...)`` themselves, so ``CHUNKNAV_*`` variables do
not reach them. This runs the bench in this process with
``Settings.validate`` replacing the named fields first (values converted to
each field's type; a name that is not a field is refused), so every
``Settings`` the bench validates gets them. Child processes a bench starts do
not (``bench/idle_gap.py`` has ``--int8-min-rows`` for that). Imports the
engine before numpy, as the benches and the CLI do.
"""

from __future__ import annotations

import dataclasses
import runpy
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main(argv: list[str]) -> None:
    """Parse ``field=value ... -- bench.py args...``, patch ``Settings.validate``, run the bench."""
    if "--" not in argv or argv.index("--") == len(argv) - 1:
        raise SystemExit(__doc__)
    cut = argv.index("--")
    sys.path.insert(0, str(REPO))
    import engine  # noqa: F401  (before numpy)
    import engine.config as config

    fields = {f.name: f for f in dataclasses.fields(config.Settings)}
    values: dict[str, object] = {}
    for pair in argv[:cut]:
        name, _, raw = pair.partition("=")
        if name not in fields or not _:
            raise SystemExit(f"not a Settings field=value: {pair!r}")
        kind = type(getattr(config.Settings(), name))
        values[name] = (raw.lower() in ("1", "true", "yes")) if kind is bool else kind(raw)
    original = config.Settings.validate

    def validate(self):
        return original(dataclasses.replace(self, **values))

    config.Settings.validate = validate  # type: ignore[method-assign]
    print(f"bench/with_settings.py: Settings fields replaced: {values}", flush=True)
    script = argv[cut + 1]
    sys.argv = argv[cut + 1 :]
    sys.path.insert(0, str(Path(script).resolve().parent))
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
