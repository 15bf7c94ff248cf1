# The two set-up commands of the README: `make demo` (report on the sample run, verified) and `make test`.
# Each creates .venv from pyproject.toml when it is missing, with the dev, inspect, fast and spark extras
# (the importer tests read .eval logs; the ingest tests run with orjson and without it; the campaign tests
# run on DuckDB and on a local Spark session).
# `make test` also installs the browser the page tests drive: Debian's chromium (Playwright for
# Python launches it by path; it never downloads a browser of its own).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
SAMPLE := data/sample-run
OUT ?= out/sample-run
LOCKED := data/locked-run

CHROMIUM ?= /usr/bin/chromium
WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))

.PHONY: demo test venv browser clean

$(BIN)/capbench-nb: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,inspect,fast,spark]'
	@# every-eval-ever (the validator of `export --format eee`, a dev tool) declares Python >= 3.12; on 3.11 its
	@# validator runs as is: installed without its dependencies (pyproject.toml's dev extra has pydantic)
	$(BIN)/python -c 'import sys; sys.exit(sys.version_info < (3, 12))' || \
	  $(BIN)/python -m pip install --quiet --no-deps --ignore-requires-python 'every-eval-ever==0.3.0'
	@touch $@

venv: $(BIN)/capbench-nb

demo: venv
	$(BIN)/capbench-nb report $(SAMPLE) --out $(OUT)
	$(BIN)/capbench-nb verify $(SAMPLE) --out $(OUT)
	@# a run of a frozen suite (spec section 12): its lock, checked; some attempts drifted in preflight
	$(BIN)/capbench-nb suite check $(LOCKED)
	$(BIN)/capbench-nb report $(LOCKED) --out out/locked-run
	$(BIN)/capbench-nb verify $(LOCKED) --out out/locked-run
	@echo "report for the sample run: $(OUT)/report.html (with metrics.json, summary.md, report.ipynb)"
	@echo "report for the locked sample run: out/locked-run/report.html (its 'Suite lock' section near the top)"

browser:
	@test -x $(CHROMIUM) || { echo "installing Debian's chromium for the page tests"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }

test: venv browser
	@# bytecode caches on even where the machine sets PYTHONDONTWRITEBYTECODE: every notebook kernel and CLI
	@# subprocess of the suite imports the package, a quarter second faster from __pycache__ (gitignored);
	@# worksteal: an idle worker takes queued tests from a busy one, so a slow test does not end the run alone;
	@# one worker more than cores: many tests wait on a kernel, a browser or a timer (measured here, 2 cores:
	@# -n 2 8:55, -n 3 8:10)
	env -u PYTHONDONTWRITEBYTECODE CAPBENCH_CHROMIUM=$(CHROMIUM) $(BIN)/python -m pytest -n $(WORKERS) --dist worksteal

clean:
	rm -rf $(VENV) out .pytest_cache .hypothesis
