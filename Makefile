# The two ways in: `make run` (the quickstart scenario) and `make test` (the whole test suite).
# Both create .venv on first use and install what they need into it.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: run test install install-dev clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

install: $(BIN)/python
	$(BIN)/pip install -q -e .

install-dev: $(BIN)/python
	$(BIN)/pip install -q -e '.[dev,torch]'

run: install
	$(BIN)/mtpsim run scenarios/quickstart.yaml

test: install-dev
	$(BIN)/python -m pytest -q

clean:
	rm -rf $(VENV) runs .pytest_cache
