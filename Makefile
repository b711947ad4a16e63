# chunknav: `make run` opens the explorer on the bundled samples; `make test` runs the suite.
# Both start from nothing: they create .venv and install the pinned requirements first.
# `make run` installs the runtime only (requirements.lock); `make test` adds the
# Postgres driver and the test tools (requirements-postgres.txt, requirements-dev.txt).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP_RUN  := $(VENV)/.installed-run
STAMP_TEST := $(VENV)/.installed-test
DB     ?= .chunknav/index.db
PORT   ?= 8501
export CHUNKNAV_DB := $(DB)

.PHONY: run test check docs setup setup-run sysdeps chromium index bench lock clean

# The runtime: the pinned closure of requirements.txt, nothing resolved at install time.
setup-run: $(STAMP_RUN)

$(STAMP_RUN): requirements.lock pyproject.toml setup.py engine/extract/_pdfwords.c
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet --no-deps -r requirements.lock
	$(BIN)/python -m pip install --quiet --no-deps -e .
	@# The lock is the closure on CPython 3.11 / Linux; elsewhere pip resolves requirements.txt.
	$(BIN)/python .ci/lock.py --check || { echo "requirements.lock does not fit this platform:" \
	  "installing requirements.txt with its full dependencies" >&2; $(BIN)/python -m pip install --quiet -r requirements.txt; }
	touch $(STAMP_RUN)

# Everything the suite needs: the runtime + Postgres driver + test and bench tools.
setup: $(STAMP_TEST)

$(STAMP_TEST): $(STAMP_RUN) requirements-postgres.txt requirements-dev.txt
	$(BIN)/python -m pip install --quiet -r requirements-postgres.txt -r requirements-dev.txt
	touch $(STAMP_TEST)

# Index the samples (progress bar on the terminal), then open the explorer on PORT.
run: setup-run sysdeps
	$(BIN)/chunknav collections list | grep -q '"Samples"' || $(BIN)/chunknav collections add Samples assets/samples
	$(BIN)/chunknav index
	$(BIN)/chunknav gui --port $(PORT)

index: setup-run
	$(BIN)/chunknav index

# Tesseract (OCR of pages without a text layer) and Poppler (page renderer) from
# Debian, installed as root with apt-get, else with sudo; skipped when present.
# A machine without them still runs: OCR and the Poppler renderer report they are missing.
SYSDEPS_OK = command -v tesseract >/dev/null && command -v pdftoppm >/dev/null && \
  ls /usr/share/tesseract-ocr/*/tessdata/eng.traineddata >/dev/null 2>&1
sysdeps:
	@$(SYSDEPS_OK) || { \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq tesseract-ocr tesseract-ocr-eng poppler-utils >/dev/null \
	  || echo "warning: could not install tesseract-ocr tesseract-ocr-eng poppler-utils (OCR and the Poppler renderer stay off)" >&2; }

# The end-to-end test drives Debian's Chromium (Playwright's own download fails here).
chromium:
	@test -x /usr/bin/chromium || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium >/dev/null; \
	  else sudo apt-get update -qq && sudo apt-get install -y -qq chromium >/dev/null; fi; }

test: setup sysdeps chromium
	$(BIN)/python -m pytest -q

# The inner loop (under 2 minutes on 2 cores): lint, format check, type check and
# the tests not marked slow, browser, postgres or install.
check: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/python -m pytest -q -m "not slow and not browser and not postgres and not install"

# Regenerate the tables of docs/ (commands, tools, settings, codes) from the code;
# tests/project/test_docs.py fails until they match.
docs: setup-run
	$(BIN)/python docs/tables.py

bench: setup
	$(BIN)/python bench/index_throughput.py
	$(BIN)/python bench/search_latency.py
	$(BIN)/python bench/embed_throughput.py
	$(BIN)/python bench/perf_rows.py

# Rewrite requirements.lock from requirements.txt (a scratch venv, resolved by pip).
lock:
	rm -rf .lock-venv && $(PYTHON) -m venv .lock-venv
	.lock-venv/bin/python -m pip install --quiet -r requirements.txt
	.lock-venv/bin/python .ci/lock.py > requirements.lock
	rm -rf .lock-venv

clean:
	rm -rf $(VENV) .chunknav .pytest_cache
