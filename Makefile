# The two commands a newcomer needs: `make demo` and `make test`.
# Both create .venv when it is missing and install the project with its test extras.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-fast fuzz lint bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# The distribution was named `tracelens` before `tracelens-logs`: an old editable install of this
	# checkout under that name would stay beside the new one, both owning the package and the command.
	$(BIN)/python -m pip uninstall --quiet --yes tracelens 2>/dev/null || true
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

# Prints the summary of sample_logs/ and writes their HTML report to report.html (its path is printed).
demo: $(STAMP)
	$(BIN)/tracelens demo

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/python -m pytest -q

# The fast lane: the tests not marked slow (tests/conftest.py SLOW_FILES: real servers, browsers,
# terminals, worker pools), one pytest-xdist worker per core. Each worker has its own temporary folders
# and cache ($XDG_CACHE_HOME, conftest.py); servers listen on free ports. `make test` runs everything.
test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -n auto -m "not slow"

# The fuzz tests with a long budget (make test runs 8 inputs per test): mutated real log lines and
# random bytes through the batch parse and the live worker; a failure is shrunk to its smallest input.
FUZZ_EXAMPLES ?= 400
fuzz: $(STAMP)
	TRACELENS_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) TRACELENS_FUZZ_SHRINK=1 $(BIN)/python -m pytest -q tests/test_fuzz.py

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python bench/throughput.py

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
