# troth — two commands: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup run demo test lint typecheck pytest browser axe screenshots bench lock clean

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

pytest: setup browser axe
	$(BIN)/pytest -q

# The browser test drives Debian's chromium (installed once, as root or with sudo).
browser:
	scripts/install-chromium.sh

# axe-core, pinned, into a cache directory (the browser tests inject it into the page).
axe:
	scripts/install-axe.sh >/dev/null

# The review page's screenshots under docs/images/ (README.md and docs/api.md show them).
screenshots: setup browser
	$(BIN)/python -m scripts.screenshots

bench: setup
	$(BIN)/python -m bench

# Regenerate the hashed lock after changing pyproject.toml.
lock:
	$(BIN)/pip-compile -q --generate-hashes --allow-unsafe --no-emit-index-url --no-emit-find-links --strip-extras --extra dev --extra postgres -o requirements.lock pyproject.toml build-requirements.in

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache
