# Two commands: `make run` serves the app on the demo corpus, `make test` runs lint and tests;
# `make serve` serves the HTTP API over the same demo index.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev
DEMO_CORPUS := .cache/demo/python_docs.jsonl
DEMO_INDEX := indexes/demo
DEMO_STAMP := $(DEMO_INDEX)/.demo-built
HOST ?= 127.0.0.1
PORT ?= 8501
API_PORT ?= 8000

export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
# No download bars from the hub client (nothing is downloaded; models load offline).
export HF_HUB_DISABLE_PROGRESS_BARS := 1
export SEMSEARCH_DATA ?= $(abspath ../shared/data)
export SEMSEARCH_INDEX ?= $(abspath $(DEMO_INDEX))

.PHONY: run serve test lint install install-dev demo-index bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)

# The project itself installs editable with the venv's own setuptools: no build-time download.
# Python 3.11's venv ships setuptools 65, which needs the `wheel` package for that; 70.1 does not.
$(STAMP): requirements.txt pyproject.toml | $(PY)
	@echo "semsearch: installing requirements.txt into $(VENV) (first run, or after it changed; a few minutes)"
	@$(PY) -m pip install -qq --disable-pip-version-check --upgrade pip
	@$(PY) -m pip install -qq --disable-pip-version-check -r requirements.txt "setuptools>=70.1"
	@$(PY) -m pip install -qq --disable-pip-version-check --no-deps --no-build-isolation -e .
	@touch $(STAMP)

# Tests, benchmarks, the docs site and Ray: only `make test`, `make lint` and `make bench` need them.
$(DEV_STAMP): requirements-dev.txt $(STAMP)
	@echo "semsearch: installing requirements-dev.txt into $(VENV) (tests, benchmarks, docs, Ray)"
	@$(PY) -m pip install -qq --disable-pip-version-check -r requirements.txt -r requirements-dev.txt
	@touch $(DEV_STAMP)

install: $(STAMP)

install-dev: $(DEV_STAMP)

$(DEMO_CORPUS): data/demo_corpus.py | $(STAMP)
	@echo "semsearch: writing the demo corpus (Python's own documentation)"
	@$(PY) -m data.demo_corpus --out $(DEMO_CORPUS) > /dev/null

# A stamp, not index.json: an upload into a missing index also creates index.json. A demo index
# of an older storage format (indexer/store/schema.py changed) is rebuilt afresh rather than refused.
$(DEMO_STAMP): $(DEMO_CORPUS) indexer/store/schema.py
	$(PY) -m indexer build --source $(DEMO_CORPUS) --index $(DEMO_INDEX) \
		|| $(PY) -m indexer build --source $(DEMO_CORPUS) --index $(DEMO_INDEX) --rebuild
	touch $@

# Builds the demo index in the foreground; `make run` does not wait for it.
demo-index: $(DEMO_STAMP)

# Serves at once. Until the demo index is complete (its stamp newer than the corpus), the app
# indexes the corpus in the background (only into the demo index, never into another SEMSEARCH_INDEX), answering from what has committed, and touches the
# stamp when done; an interrupted build resumes there next time.
run: $(STAMP) $(DEMO_CORPUS)
	@if [ "$$SEMSEARCH_INDEX" != "$(abspath $(DEMO_INDEX))" ] || { [ -e $(DEMO_STAMP) ] \
			&& [ $(DEMO_STAMP) -nt $(DEMO_CORPUS) ] && [ $(DEMO_STAMP) -nt indexer/store/schema.py ]; }; \
		then build=""; \
		else build="$(abspath $(DEMO_CORPUS))"; fi; \
	if [ -n "$$build" ]; then todo="the demo corpus indexes in the background, searchable as it commits"; \
		else todo="serving $$SEMSEARCH_INDEX"; fi; \
	echo "semsearch: open http://$(HOST):$(PORT) ($$todo; Ctrl-C stops)"; \
	SEMSEARCH_BUILD_SOURCE="$$build" SEMSEARCH_BUILD_STAMP="$(abspath $(DEMO_STAMP))" \
	$(VENV)/bin/streamlit run app.py --server.headless true --server.address $(HOST) \
		--server.port $(PORT) --browser.gatherUsageStats false

# The HTTP API (search/api.py) over the demo index: one uvicorn worker, docs at /docs.
serve: $(STAMP) demo-index
	$(PY) -m search.api --index $(DEMO_INDEX) --host $(HOST) --port $(API_PORT)

lint: $(DEV_STAMP)
	$(VENV)/bin/ruff check .

# pytest-xdist: one worker per core, at most 4 (each loads torch and models, a few servers start Ray
# or Chromium); worksteal evens out the minute-long tests. One file alone: .venv/bin/python -m pytest FILE.
test: $(DEV_STAMP)
	$(VENV)/bin/ruff check .
	$(PY) -m mypy
	$(PY) -m pytest -q -n auto --maxprocesses=4 --dist worksteal --durations=15

bench: $(DEV_STAMP)
	$(PY) bench/bench_indexing.py
	$(PY) bench/bench_scifact.py

clean:
	rm -rf $(VENV) .cache indexes .pytest_cache .ruff_cache .mypy_cache
