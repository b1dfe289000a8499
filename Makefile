# troth — `make run` serves, `make install` puts `troth` on your PATH, `make test` checks.
#
# Three hashed locks (docs/operations.md, "Installing"):
#   requirements-run.lock    what running needs: pyproject's dependencies + the postgres extra
#   requirements-dev.lock    the development environment: the dev extra and the build backend,
#                            constrained to the runtime lock's pins (a superset of it)
#   requirements-build.lock  the build backend alone, for building the wheel
PYTHON ?= python3
PIP_FLAGS := --quiet --disable-pip-version-check
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)
WHEEL := dist/troth-$(VERSION)-py3-none-any.whl
SOURCES := pyproject.toml README.md $(shell find src -type f -not -path '*/__pycache__/*' -not -name '*.pyc')

VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
RUN_VENV := .venv-run
RUN_STAMP := $(RUN_VENV)/.installed
BUILD_VENV := build/venv
BUILD_STAMP := $(BUILD_VENV)/.installed
WHEELHOUSE := build/wheelhouse
WHEELHOUSE_STAMP := $(WHEELHOUSE)/.complete
PREFIX ?= $(HOME)/.local

.PHONY: setup run install uninstall wheel demo test lint typecheck pytest browser goverifiers axe screenshots bench lock clean

# The development environment: re-installed only when its lock changes, a no-op otherwise.
setup: $(STAMP) $(WHEELHOUSE_STAMP)

$(STAMP): pyproject.toml requirements-dev.lock
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install $(PIP_FLAGS) --require-hashes -r requirements-dev.lock
	$(BIN)/python -m pip install $(PIP_FLAGS) --no-deps --no-build-isolation -e .
	touch $(STAMP)

# The runtime lock's wheels, for the tests that install the wheel into fresh environments
# without the network (tests/install/).
$(WHEELHOUSE_STAMP): requirements-run.lock
	mkdir -p $(WHEELHOUSE)
	$(PYTHON) -m pip download $(PIP_FLAGS) --require-hashes --no-deps --only-binary=:all: -d $(WHEELHOUSE) -r requirements-run.lock
	touch $(WHEELHOUSE_STAMP)

$(BUILD_STAMP): requirements-build.lock
	test -x $(BUILD_VENV)/bin/python || $(PYTHON) -m venv $(BUILD_VENV)
	$(BUILD_VENV)/bin/python -m pip install $(PIP_FLAGS) --require-hashes -r requirements-build.lock
	touch $(BUILD_STAMP)

wheel: $(WHEEL)

$(WHEEL): $(SOURCES) | $(BUILD_STAMP)
	rm -f dist/troth-*.whl
	$(BUILD_VENV)/bin/python -m pip wheel $(PIP_FLAGS) --no-deps --no-build-isolation --no-index -w dist .

# The run environment: the runtime lock and the wheel, no development tool.
$(RUN_STAMP): requirements-run.lock $(WHEEL)
	test -x $(RUN_VENV)/bin/python || $(PYTHON) -m venv $(RUN_VENV)
	$(RUN_VENV)/bin/python -m pip install $(PIP_FLAGS) --require-hashes -r requirements-run.lock
	$(RUN_VENV)/bin/python -m pip install $(PIP_FLAGS) --no-deps --force-reinstall $(WHEEL)
	touch $(RUN_STAMP)

run: $(RUN_STAMP)
	$(RUN_VENV)/bin/troth serve --first-token

# `troth` as a user-level command: a venv under $(PREFIX)/lib/troth, a link in $(PREFIX)/bin.
install: $(WHEEL)
	PYTHON=$(PYTHON) PREFIX=$(PREFIX) scripts/install-user.sh $(WHEEL)

uninstall:
	rm -f $(PREFIX)/bin/troth
	rm -rf $(PREFIX)/lib/troth

demo: $(RUN_STAMP)
	$(RUN_VENV)/bin/python -m troth.adapters.walkthrough

test: setup lint typecheck pytest

lint: setup
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

typecheck: setup
	$(BIN)/mypy src

pytest: setup browser goverifiers axe
	$(BIN)/pytest -q

# The browser test drives Debian's chromium (installed once, as root or with sudo).
browser:
	scripts/install-chromium.sh

# The reference checkers of signed checkpoints and proofs (Go's sumdb/note and sumdb/tlog,
# from Debian; installed once, as root or with sudo).
goverifiers:
	scripts/install-go-verifiers.sh

# axe-core, pinned, into a cache directory (the browser tests inject it into the page).
axe:
	scripts/install-axe.sh >/dev/null

# The review page's screenshots under docs/images/ (README.md and docs/api.md show them).
screenshots: setup browser
	$(BIN)/python -m scripts.screenshots

bench: setup
	$(BIN)/python -m bench

# Regenerate the hashed locks after changing pyproject.toml (the runtime lock first: the
# development lock is constrained to its pins).
COMPILE := $(BIN)/pip-compile -q --generate-hashes --allow-unsafe --no-emit-index-url --no-emit-find-links --strip-extras
lock:
	$(COMPILE) --extra postgres -o requirements-run.lock pyproject.toml
	$(COMPILE) --extra dev --extra postgres -o requirements-dev.lock pyproject.toml dev-requirements.in
	$(COMPILE) -o requirements-build.lock build-requirements.in

clean:
	rm -rf $(VENV) $(RUN_VENV) build dist .mypy_cache .ruff_cache
