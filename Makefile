# crd-scheduler: every target installs what it needs first (pip install -e '.[dev]').
PY ?= python3
STAMP := .stamp-install

.PHONY: install browser test unit e2e lint simulate bench crds clean

install: $(STAMP)
# The sample out-of-tree plugin (tests/sample_plugin) is part of the dev install: its tests load
# it through the real crd_scheduler.plugins entry-point group.
$(STAMP): pyproject.toml tests/sample_plugin/pyproject.toml
	$(PY) -m pip install --quiet -e '.[dev]' -e tests/sample_plugin
	@touch $@

## browser: headless Chromium from Debian's package, for the HTML report tests (tests/browser)
browser:
	@command -v chromium >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -qq chromium chromium-driver >/dev/null; }

## test: every test, the real-API-server ones included (builds the dev cluster binaries on first use)
test: install browser
	scripts/dev-cluster build
	$(PY) -m pytest -q -p no:cacheprovider

unit: install browser
	$(PY) -m pytest -q tests/unit tests/integration tests/browser

e2e: install
	scripts/dev-cluster build
	$(PY) -m pytest -q tests/e2e

lint: install
	$(PY) -m ruff check scheduler_core scheduler_operator tests bench
	$(PY) -m ruff format --check scheduler_core scheduler_operator tests bench
	$(PY) -m mypy scheduler_core scheduler_operator tests bench
	lint-imports
	$(PY) -m scheduler_core.config.crd --check

## crds: regenerate crds/ and manifests/crds/ from the pydantic config models
crds: install
	$(PY) -m scheduler_core.config.crd

simulate: install
	crd-scheduler simulate -f examples/cluster.yaml -o table

bench: install
	$(PY) bench/run.py SchedulingBasic --nodes 5000 --pods 10000 --json

clean:
	rm -f $(STAMP)
