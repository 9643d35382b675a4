# The two ways in: `make run` (the quickstart scenario) and `make test` (ruff, then the whole test suite).
# Both create .venv on first use and install what they need into it.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: run test lint install install-dev clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

install: $(BIN)/python
	$(BIN)/pip install -q -e .

install-dev: $(BIN)/python
	$(BIN)/pip install -q -e '.[dev,torch]'

run: install
	$(BIN)/mtpsim run scenarios/quickstart.yaml

# lint first: a style or unused-import slip fails CI as fast as a broken test
test: install-dev lint
	$(BIN)/python -m pytest -q

lint: install-dev
	$(BIN)/ruff check .

clean:
	rm -rf $(VENV) runs .pytest_cache
