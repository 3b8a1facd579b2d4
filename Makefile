# crd-scheduler: every target installs what it needs first, from the lock (requirements/).
PY ?= python3
STAMP := .stamp-install
LOCK := requirements/dev.txt
UV_COMPILE := $(PY) -m uv pip compile --quiet --generate-hashes --python-version 3.11 --universal

.PHONY: install browser test unit e2e faults lint simulate bench crds clean lock deps-latest dist dist-test chart chart-test image image-test image-tools conformance

# The stamp only dates the install: whether there is one of this checkout, the interpreter is
# asked. Its editable crd-scheduler must come from here, or a moved or copied checkout (entry
# points naming a path gone), a new machine given the old checkout, or another clone's
# `make install` since would pass for installed.
INSTALLED_FROM := $(shell $(PY) -c "import importlib.metadata as m, json; print(json.loads(m.distribution('crd-scheduler').read_text('direct_url.json'))['url'])" 2>/dev/null)
ifneq ($(INSTALLED_FROM),file://$(CURDIR))
.PHONY: $(STAMP)
endif
install: $(STAMP)
# Every dependency from the lock, hashes checked; then the project itself (and the sample
# out-of-tree plugin, tests/sample_plugin, whose tests load it through the real
# crd_scheduler.plugins entry-point group) with no dependency resolution of their own.
$(STAMP): pyproject.toml tests/sample_plugin/pyproject.toml $(LOCK)
	$(PY) -m pip install --quiet --require-hashes -r $(LOCK)
	@rm -rf crd_scheduler.egg-info  # a build's metadata in the tree would shadow the installed version
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e . -e tests/sample_plugin
	@touch $@

## lock: re-resolve requirements/*.txt to the newest versions pyproject.toml allows (requirements/README.md)
lock: install
	$(UV_COMPILE) --upgrade pyproject.toml --extra dev requirements/tools.in -o requirements/dev.txt
	$(UV_COMPILE) pyproject.toml -c requirements/dev.txt -o requirements/runtime.txt

## deps-latest: the unit tests against the newest allowed versions, in a throw-away venv (no lock)
deps-latest:
	$(PY) hack/deps_latest.py

## dist: the wheel and sdist into dist/ (python -m build with the locked setuptools), checked by twine
dist: install
	rm -f dist/crd_scheduler-*.whl dist/crd_scheduler-*.tar.gz
	$(PY) -m build --no-isolation --outdir dist .
	$(PY) -m twine check --strict dist/crd_scheduler-*

## dist-test: the wheel alone in a new venv (with the runtime lock) runs --version and simulate --example
dist-test: install
	$(PY) -m pytest -q -p no:cacheprovider tests/release

## browser: headless Chromium from Debian's package, for the HTML report tests (tests/browser)
browser:
	@command -v chromium >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -qq chromium chromium-driver >/dev/null; }

## test: every test, the real-API-server ones included (builds the dev cluster binaries on first use)
test: install browser
	scripts/dev-cluster build
	$(PY) -m pytest -q -rs -p no:cacheprovider

unit: install browser
	$(PY) -m pytest -q tests/unit tests/integration tests/browser

e2e: install
	scripts/dev-cluster build
	$(PY) -m pytest -q tests/e2e

## faults: the fault scenarios (API server killed/frozen, leader frozen/killed; minutes): lost, double-bound and
## overcommitted pods, recovery seconds, one "fault figures:" line each (docs/faults.md)
faults: install
	scripts/dev-cluster build
	$(PY) -m pytest -q -s -m faults tests/e2e/test_faults.py

lint: install
	$(PY) -m ruff check scheduler_core scheduler_operator tests bench hack/deps_latest.py hack/image hack/upstream_metrics.py
	$(PY) -m ruff format --check scheduler_core scheduler_operator tests bench hack/deps_latest.py hack/image hack/upstream_metrics.py
	$(PY) -m mypy scheduler_core scheduler_operator tests bench hack/deps_latest.py hack/image hack/upstream_metrics.py
	lint-imports
	$(PY) -m scheduler_core.config.crd --check

## chart: package charts/crd-scheduler into dist/ with the pinned helm (hack/helm, built on first use)
chart:
	helm_bin="$$(scripts/dev-cluster build helm)/helm" && "$$helm_bin" lint --strict charts/crd-scheduler \
		&& "$$helm_bin" package charts/crd-scheduler --destination dist

## chart-test: the chart with the real helm: lint, render against manifests/, install, upgrade, uninstall
chart-test: install
	scripts/dev-cluster build
	$(PY) -m pytest -q tests/unit/config/test_chart.py tests/e2e/test_helm_chart.py

## image: the OCI image from Debian packages, no registry or daemon (root): debootstrap (cached in .cache/image),
## the wheel of `make dist` and the runtime lock, umoci; dist/image/crd-scheduler-<version>-oci and its .tar (oci-archive)
image: dist image-tools
	$(PY) hack/image/build.py --archive --wheel "$$(ls dist/crd_scheduler-*.whl)"

## image-test: build the image, then run it with crun (read-only root, user 65532): --version, labels, size,
## and `crd-scheduler run` binds a pod on the dev cluster as the operator's ServiceAccount
image-test: install image
	scripts/dev-cluster build
	CRD_SCHEDULER_IMAGE_TEST=1 $(PY) -m pytest -q -p no:cacheprovider tests/unit/test_image_recipe.py tests/e2e/test_image.py

image-tools:
	@for tool in debootstrap umoci crun; do command -v $$tool >/dev/null 2>&1 || missing=1; done; \
	if [ -n "$$missing" ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -qq debootstrap umoci crun >/dev/null; fi

## conformance: upstream's e2e specs on kwok nodes (SELECTION=scheduling|scheduling-conformance|workloads|gated,
## SCHEDULER=kube-scheduler|crd-scheduler|both); builds kwok and e2e.test on first use (hack/conformance/README.md)
SELECTION ?= scheduling-conformance
SCHEDULER ?= both
conformance: install
	scripts/conformance --selection $(SELECTION) --scheduler $(SCHEDULER)

## crds: regenerate crds/, manifests/crds/ and charts/crd-scheduler/crds/ from the pydantic config models
crds: install
	$(PY) -m scheduler_core.config.crd

simulate: install
	crd-scheduler simulate -f examples/cluster.yaml -o table

bench: install
	$(PY) bench/run.py SchedulingBasic --nodes 5000 --pods 10000 --json

clean:
	rm -f $(STAMP)
