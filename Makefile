# The ways in: `make run` (the quickstart scenario), `make test` (ruff, then the whole test suite) and
# `make notebooks` (every notebook executed into runs/notebooks/).
# Both create .venv on first use and install what they need into it.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: run test lint notebooks install install-dev clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# byte-compile the package once: an editable install leaves only sources, and where the environment
# sets PYTHONDONTWRITEBYTECODE (as this project's machines do) every command would recompile every
# module it imports (~0.3-0.6 s of `mtpsim run`'s start-up, benchmarks/cli_pair.py)
install: $(BIN)/python
	$(BIN)/pip install -q -e .
	$(BIN)/python -m compileall -q mtpsim

install-dev: $(BIN)/python
	$(BIN)/pip install -q -e '.[dev,torch]'
	$(BIN)/python -m compileall -q mtpsim

run: install
	$(BIN)/mtpsim run scenarios/quickstart.yaml

# lint first: a style or unused-import slip fails CI as fast as a broken test
test: install-dev lint
	$(BIN)/python -m pytest -q -n auto --maxprocesses 4

# every notebook, top to bottom; the executed copies (outputs, figures) go to runs/notebooks/
notebooks: install-dev
	$(BIN)/python notebooks/run.py

lint: install-dev
	$(BIN)/ruff check .

clean:
	rm -rf $(VENV) runs .pytest_cache
