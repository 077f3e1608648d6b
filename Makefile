# Two commands do everything on a machine with only Python 3.11, gcc and make:
#   make demo   - create .venv, install calframe with its plot extra (matplotlib: the report's figures), run the demo
#   make test   - create .venv, install calframe with its test extras, run the suite
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test java browser bench docs install clean

# uv (installed into .venv by pip, from PyPI) installs the packages: the same versions pip picks, the test extras
# in 55 s instead of pip's 87 s on 2 cores with no download cache. --compile-bytecode, as pip does: where
# PYTHONDONTWRITEBYTECODE is set (as on CI's machines), a package left uncompiled is compiled again by every process
# that imports it (a suite run took 5 more minutes of CPU so). compileall does the same for calframe's own modules
# before each run (an editable install leaves them as they are; it redoes only what changed).
UV := $(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python
COMPILE := $(BIN)/python -m compileall -q -j 0 calframe

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(BIN)/uv: | $(BIN)/python
	@echo "installing uv into $(VENV) (pip install uv): it installs calframe's packages"
	$(BIN)/python -m pip install --quiet uv

$(VENV)/.installed: pyproject.toml | $(BIN)/uv
	$(UV) -e .
	touch $@

$(VENV)/.installed-demo: pyproject.toml | $(BIN)/uv
	$(UV) -e ".[plot]"
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/uv
	$(UV) -e ".[test,plot,dask,docs]"
	touch $@

$(VENV)/.installed-bench: pyproject.toml | $(BIN)/python
	# torch 2.13.0 (CPU) lies on this machine's disk; pin it so pip does not fetch a CUDA build.
	$(BIN)/pip install --quiet "torch==2.13.0" || true
	$(BIN)/pip install --quiet -e ".[test,bench]"
	touch $@

$(VENV)/.installed-docs: pyproject.toml | $(BIN)/uv
	$(UV) -e ".[docs]"
	touch $@

install: $(VENV)/.installed

demo: $(VENV)/.installed-demo
	@$(COMPILE)
	$(BIN)/calframe demo

# Headless Chromium renders the HTML report in tests/test_report_browser.py. It is a system package, not a
# Python extra: this step installs it with apt-get (Debian package 'chromium') when it is missing, saying so,
# and does nothing when it is there. CALFRAME_NO_BROWSER=1 skips the step (and the browser tests); without root
# or apt-get it is skipped with a message, and the browser tests skip with a reason.
CHROMIUM_NAMES ?= chromium chromium-browser

browser:
	@found=; for name in $(CHROMIUM_NAMES); do command -v $$name >/dev/null 2>&1 && found=$$name && break; done; \
	if [ "$$CALFRAME_NO_BROWSER" = 1 ]; then \
	  echo "browser: CALFRAME_NO_BROWSER=1: not installing chromium; the browser tests will skip"; \
	elif [ -n "$$found" ]; then \
	  :; \
	elif [ "$$(id -u)" != 0 ]; then \
	  echo "browser: chromium is missing and installing it needs root: the browser tests will skip"; \
	elif ! command -v apt-get >/dev/null 2>&1; then \
	  echo "browser: chromium is missing and there is no apt-get: the browser tests will skip"; \
	else \
	  echo "installing chromium with apt-get (Debian package 'chromium') for the browser tests"; \
	  { DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } || \
	  echo "browser: apt-get could not install chromium: the browser tests will skip"; \
	fi

# --require-extras: a test extra that fails to import fails the run (tests/conftest.py);
# --hypothesis-profile=ci: derandomized, reproducible property tests;
# -n 2 --dist loadgroup: two pytest-xdist workers (the machine's two cores), every Spark test in one of them
# (tests/conftest.py groups them), so one Spark session starts;
# --warm-cache: `calframe warmup` first, into a fresh kernel cache the run shares; the docs pages run on a copy
# of it with compiling forbidden (tests/conftest.py, tests/test_readme.py).
test: $(VENV)/.installed-test java browser
	@$(COMPILE)
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup --require-extras --hypothesis-profile=ci --warm-cache

# pyspark (a test extra, installed into .venv) runs on Java 17, which is never installed here: shown, or a clear stop.
java:
	@if command -v java >/dev/null 2>&1; then echo "Java for the Spark tests: $$(java -version 2>&1 | head -n 1)"; \
	else echo "Java 17 is not on PATH: the Spark tests (marked spark) need it. Install a JDK 17 (e.g." \
	  "apt-get install openjdk-17-jre-headless), or run the rest: $(BIN)/python -m pytest -m 'not spark'"; exit 1; fi

bench: $(VENV)/.installed-bench
	$(BIN)/python benchmarks/bench_binned.py

docs: $(VENV)/.installed-docs
	$(BIN)/mkdocs build --strict --site-dir site

# numba's disk cache (calframe/**/__pycache__/*.nbi, *.nbc) is keyed on each kernel's own source file: after
# editing an inline helper in another module, `make clean` (or deleting those files) recompiles the kernels.
clean:
	rm -rf $(VENV) build *.egg-info
	find calframe -name '*.nbi' -delete -o -name '*.nbc' -delete
