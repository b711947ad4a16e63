# chunknav: `make run` opens the explorer on the bundled samples; `make test` runs the suite.
# Both start from nothing: they create .venv and install the pinned requirements first.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DB     ?= .chunknav/index.db
export CHUNKNAV_DB := $(DB)

.PHONY: run test setup chromium tesseract index bench clean

setup: $(STAMP)

$(STAMP): requirements.txt requirements-dev.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $(STAMP)

# Index the samples (progress bar on the terminal), then open the explorer.
run: setup
	$(BIN)/chunknav collections list | grep -q '"Samples"' || $(BIN)/chunknav collections add Samples assets/samples
	$(BIN)/chunknav index
	$(BIN)/chunknav gui

index: setup
	$(BIN)/chunknav index

# The end-to-end test drives Debian's Chromium (Playwright's own download fails here).
chromium:
	@test -x /usr/bin/chromium || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium >/dev/null; \
	  else sudo apt-get update -qq && sudo apt-get install -y -qq chromium >/dev/null; fi; }

# OCR of scanned pages uses Debian's Tesseract and its English data (other languages: tesseract-ocr-<lang>).
tesseract:
	@command -v tesseract >/dev/null && ls /usr/share/tesseract-ocr/*/tessdata/eng.traineddata >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq tesseract-ocr tesseract-ocr-eng >/dev/null; \
	  else sudo apt-get update -qq && sudo apt-get install -y -qq tesseract-ocr tesseract-ocr-eng >/dev/null; fi; }

test: setup chromium tesseract
	$(BIN)/python -m pytest -q

bench: setup
	$(BIN)/python bench/index_throughput.py
	$(BIN)/python bench/search_latency.py
	$(BIN)/python bench/embed_throughput.py

clean:
	rm -rf $(VENV) .chunknav .pytest_cache
