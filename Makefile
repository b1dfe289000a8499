# troth — two commands: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup run demo test lint typecheck pytest browser goverifiers bench lock clean

setup: $(STAMP)

# Re-install only when the pinned inputs change; a no-op otherwise.
$(STAMP): pyproject.toml requirements.lock
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --require-hashes -r requirements.lock
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	touch $(STAMP)

run: setup
	$(BIN)/troth serve --first-token

demo: setup
	$(BIN)/python -m troth.adapters.walkthrough

test: setup lint typecheck pytest

lint: setup
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

typecheck: setup
	$(BIN)/mypy src

pytest: setup browser goverifiers
	$(BIN)/pytest -q

# The browser test drives Debian's chromium (installed once, as root or with sudo).
browser:
	scripts/install-chromium.sh

# The reference checkers of signed checkpoints and proofs (Go's sumdb/note and sumdb/tlog,
# from Debian; installed once, as root or with sudo).
goverifiers:
	scripts/install-go-verifiers.sh

bench: setup
	$(BIN)/python -m bench

# Regenerate the hashed lock after changing pyproject.toml.
lock:
	$(BIN)/pip-compile -q --generate-hashes --allow-unsafe --no-emit-index-url --no-emit-find-links --strip-extras --extra dev --extra postgres -o requirements.lock pyproject.toml build-requirements.in

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache
