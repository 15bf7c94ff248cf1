# The two set-up commands of the README: `make demo` (report on the sample run, verified) and `make test`.
# Each creates .venv from pyproject.toml when it is missing, with the dev, inspect and fast extras
# (the importer tests read .eval logs; the ingest tests run with orjson and without it).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
SAMPLE := data/sample-run
OUT ?= out/sample-run

.PHONY: demo test venv clean

$(BIN)/capbench-nb: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,inspect,fast]'
	@touch $@

venv: $(BIN)/capbench-nb

demo: venv
	$(BIN)/capbench-nb report $(SAMPLE) --out $(OUT)
	$(BIN)/capbench-nb verify $(SAMPLE) --out $(OUT)
	@echo "report for the sample run: $(OUT)/report.html (with metrics.json, summary.md, report.ipynb)"

test: venv
	$(BIN)/python -m pytest

clean:
	rm -rf $(VENV) out .pytest_cache .hypothesis
