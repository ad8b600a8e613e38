# arknb: `make demo` and `make test` work on a fresh clone with only Python 3.11+ and Node.
SHELL  := /bin/bash
VENV   ?= .venv
PYTHON ?= python3
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.arknb-installed

.PHONY: demo demo-terminal test test-fast bundle bundle-check notebooks bench clean

# The first install takes a minute or two: say so, and show each package as pip
# collects it (one numbered line each) instead of a silent wait.
$(STAMP): pyproject.toml
	@echo "==> arknb: setting up $(VENV) (first run only; about a minute or two)"
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@echo "==> [1/2] upgrading pip"
	@$(PY) -m pip install -q --upgrade pip --disable-pip-version-check
	@echo "==> [2/2] installing arknb with its dev, otel, postgres, pdf, mcp and agui extras"
	@$(PY) -m pip install --disable-pip-version-check -e '.[dev,otel,postgres,pdf,mcp,agui]' 2>&1 \
		| awk '/^Collecting/ {n++; printf "  [%d] %s\n", n, $$2; fflush()} \
		       /^Installing collected/ {print "  installing " n " packages..."; fflush()} \
		       /^(ERROR|error)/ {print; fflush()}' ; \
		status=$${PIPESTATUS[0]}; test $$status -eq 0 || { echo "==> pip failed (exit $$status): run '$(PY) -m pip install -e .[dev,otel,postgres,pdf,mcp,agui]' to see why"; exit $$status; }
	@echo "==> ready"
	@touch $(STAMP)

js/node_modules/.package-lock.json: js/package-lock.json
	npm ci --prefix js --no-audit --no-fund --loglevel=error

## demo: the scripted agent as a live event stream in the terminal, then JupyterLab on the quickstart
demo: $(STAMP)
	$(PY) -m arknb.demo
	@if [ -n "$$NO_LAB" ] || [ -n "$$CI" ]; then echo "(NO_LAB/CI set: not opening JupyterLab)"; \
	else $(VENV)/bin/jupyter lab --ServerApp.root_dir=notebooks \
		--LabApp.default_url=/lab/tree/01_quickstart.ipynb \
		$(if $(filter 0,$(shell id -u)),--ServerApp.allow_root=True); fi

demo-terminal: $(STAMP)
	$(PY) -m arknb.demo

## bundle: rebuild the widget front end into arknb/static
bundle: js/node_modules/.package-lock.json
	npm --prefix js run build

## bundle-check: fail if the committed bundle differs from a fresh build
bundle-check: js/node_modules/.package-lock.json
	bash js/check_bundle.sh

## test: the whole suite (secret scan of notebooks/, unit, provider HTTP, widgets, notebooks under nbval, real-browser,
## and arknb against a real llama.cpp server: built once by tests/real/build_llama_server.sh, which .ci/run calls)
# Browser suites use Playwright's sync API, which owns an event loop for the whole
# process; they run in their own pytest processes so the asyncio tests never share it.
PYTEST := $(PY) -m pytest -q -p no:cacheprovider

test: $(STAMP) bundle-check
	$(PY) -m arknb.scan_secrets notebooks
	$(PYTEST) --ignore=tests/browser --ignore=tests/js --ignore=tests/real tests
	$(PYTEST) tests/real
	$(PYTEST) --nbval notebooks
	$(PYTEST) tests/js
	$(PYTEST) tests/browser

test-fast: $(STAMP)
	$(PYTEST) -x --ignore=tests/browser --ignore=tests/js --ignore=tests/real tests

bench: $(STAMP)
	bash benchmarks/setup_peers.sh
	benchmarks/.peers-venv/bin/python benchmarks/run.py

clean:
	rm -rf $(VENV) js/node_modules test-results .pytest_cache
