# Two commands do everything on a machine with only Python 3.11, gcc and make:
#   make demo   - create .venv, install calframe, run the demo
#   make test   - create .venv, install calframe with its test extras, run the suite
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test java bench docs install clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e ".[test,plot,dask,docs]"
	touch $@

$(VENV)/.installed-bench: pyproject.toml | $(BIN)/python
	# torch 2.13.0 (CPU) lies on this machine's disk; pin it so pip does not fetch a CUDA build.
	$(BIN)/pip install --quiet "torch==2.13.0" || true
	$(BIN)/pip install --quiet -e ".[test,bench]"
	touch $@

$(VENV)/.installed-docs: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e ".[docs]"
	touch $@

install: $(VENV)/.installed

demo: $(VENV)/.installed
	$(BIN)/calframe demo

# --require-extras: a test extra that fails to import fails the run (tests/conftest.py);
# --hypothesis-profile=ci: derandomized, reproducible property tests.
test: $(VENV)/.installed-test java
	$(BIN)/python -m pytest -q --require-extras --hypothesis-profile=ci

# pyspark (a test extra, installed into .venv) runs on Java 17, which is never installed here: shown, or a clear stop.
java:
	@if command -v java >/dev/null 2>&1; then echo "Java for the Spark tests: $$(java -version 2>&1 | head -n 1)"; \
	else echo "Java 17 is not on PATH: the Spark tests (marked spark) need it. Install a JDK 17 (e.g." \
	  "apt-get install openjdk-17-jre-headless), or run the rest: $(BIN)/python -m pytest -m 'not spark'"; exit 1; fi

bench: $(VENV)/.installed-bench
	$(BIN)/python benchmarks/bench_binned.py

docs: $(VENV)/.installed-docs
	$(BIN)/mkdocs build --strict --site-dir site

clean:
	rm -rf $(VENV) build *.egg-info
