# blocklab: `make demo` and `make test` work on a fresh machine; every target
# installs what it needs, idempotently.

CARGO ?= cargo
export CARGO_TARGET_DIR ?= $(CURDIR)/target
WASM_TARGET := wasm32-wasip2
# Every plugin crate: workloads, adapters, and the test-only ones.
PLUGIN_DIRS := $(patsubst %/Cargo.toml,%,$(wildcard plugins/workloads/*/Cargo.toml plugins/adapters/*/Cargo.toml plugins/tests/*/Cargo.toml))
PLUGIN_NAMES := $(notdir $(PLUGIN_DIRS))
PLUGIN_OUT := $(CARGO_TARGET_DIR)/plugins
BLOCKLAB := $(CARGO_TARGET_DIR)/release/blocklab
SERVE ?= 1
# Where `make demo` serves the UI afterwards.
DEMO_LISTEN ?= 127.0.0.1:7878
# The charting library vendored under web/vendor (see docs/daemon.md).
UPLOT_VERSION := 1.6.32

# Workload plugins in Python (plugins/python/NAME/app.py), built with
# componentize-py from PyPI into target/plugins/NAME.wasm.
PYTHON ?= python3
COMPONENTIZE_PY_VERSION := 0.25.1
# The stock gRPC server the interop tests run against (host/tests/peers).
GRPCIO_VERSION := 1.85.3
PY_PLUGIN_NAMES := $(notdir $(patsubst %/app.py,%,$(wildcard plugins/python/*/app.py)))
PY_PLUGINS := $(addprefix $(PLUGIN_OUT)/,$(addsuffix .wasm,$(PY_PLUGIN_NAMES)))

# Workload plugins in JavaScript (plugins/js/NAME/app.js), built with
# ComponentizeJS (pinned in plugins/js/package-lock.json) by
# plugins/js/build.mjs into target/plugins/NAME.wasm.
JS_PLUGIN_NAMES := $(notdir $(patsubst %/app.js,%,$(wildcard plugins/js/*/app.js)))
JS_PLUGINS := $(addprefix $(PLUGIN_OUT)/,$(addsuffix .wasm,$(JS_PLUGIN_NAMES)))
COMPONENTIZE_JS := plugins/js/node_modules/@bytecodealliance/componentize-js/package.json

# mk/peers.mk: `make peers`, the native client peers into $(CARGO_TARGET_DIR)/peers.
.PHONY: all demo demo-plugins test build host plugins plugins-py plugins-js deps deps-wasm deps-python deps-js deps-browser deps-net deps-valgrind vendor-web lint fmt lint-wasm bench-boundary bench-precision bench-compare

all: build

## deps: toolchain pieces the build needs (the wasm target).
deps: deps-wasm
deps-wasm:
	@rustup target list --installed | grep -qx $(WASM_TARGET) || rustup target add $(WASM_TARGET)

## deps-python: componentize-py (for plugins-py) and grpcio (for the gRPC
## interop tests) at their pinned versions.
deps-python:
	@$(PYTHON) -m pip show componentize-py 2>/dev/null | grep -qx "Version: $(COMPONENTIZE_PY_VERSION)" \
		|| $(PYTHON) -m pip install --quiet componentize-py==$(COMPONENTIZE_PY_VERSION)
	@$(PYTHON) -m pip show grpcio 2>/dev/null | grep -qx "Version: $(GRPCIO_VERSION)" \
		|| $(PYTHON) -m pip install --quiet grpcio==$(GRPCIO_VERSION)

## plugins-py: every Python plugin (plugins/python/NAME/app.py) as a component
## into target/plugins/NAME.wasm, built by plugins/python/build.py (the SDK
## plugins/python/sdk on its path, WASI stubbed out).
plugins-py: deps-python $(PY_PLUGINS)

$(PLUGIN_OUT)/%.wasm: plugins/python/%/app.py plugins/python/sdk/blocklab.py plugins/python/build.py $(wildcard wit/v0.5.0/*.wit wit/v0.4.0/*.wit wit/v0.3.0/*.wit) | deps-python
	$(PYTHON) plugins/python/build.py plugins/python/$* wit/v0.5.0 $@

## deps-js: node and npm (Debian's), then ComponentizeJS at the version
## pinned in plugins/js/package-lock.json, once.
deps-js: $(COMPONENTIZE_JS)
$(COMPONENTIZE_JS): plugins/js/package-lock.json
	@command -v node >/dev/null && command -v npm >/dev/null || (apt-get -o DPkg::Lock::Timeout=600 update && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y nodejs npm)
	npm ci --prefix plugins/js --no-audit --no-fund
	@touch $@

## plugins-js: every JavaScript plugin as a component into
## target/plugins/NAME.wasm (about 30 s each; rebuilt only when its sources,
## the SDK or wit/ change).
plugins-js: $(JS_PLUGINS)

$(PLUGIN_OUT)/%.wasm: plugins/js/%/app.js plugins/js/sdk/blocklab.js plugins/js/build.mjs $(wildcard wit/v0.5.0/*.wit wit/v0.4.0/*.wit wit/v0.3.0/*.wit) $(COMPONENTIZE_JS)
	node plugins/js/build.mjs $< wit/v0.5.0 $@

# $(call rust-plugins,NAMES): those plugin crates built as components into
# target/plugins/NAME.wasm.
define rust-plugins
	$(CARGO) build --target $(WASM_TARGET) --profile plugin $(addprefix -p ,$(1))
	@mkdir -p $(PLUGIN_OUT)
	@for name in $(1); do \
		cp $(CARGO_TARGET_DIR)/$(WASM_TARGET)/plugin/$$(echo $$name | tr - _).wasm $(PLUGIN_OUT)/$$name.wasm; \
	done
endef

## plugins: every plugin crate built as a component into target/plugins/NAME.wasm,
## and the Python and JavaScript plugins (plugins-py, plugins-js).
plugins: deps-wasm plugins-py plugins-js
	$(call rust-plugins,$(PLUGIN_NAMES))
	$(CARGO) build --target $(WASM_TARGET) --profile plugin-size -p kv-basic
	cp $(CARGO_TARGET_DIR)/$(WASM_TARGET)/plugin-size/kv_basic.wasm $(PLUGIN_OUT)/kv-basic-size.wasm
	@echo "plugins: $(addsuffix .wasm,$(addprefix $(PLUGIN_OUT)/,$(PLUGIN_NAMES))) $(PY_PLUGINS) $(JS_PLUGINS)"

## host: the blocklab binary, release build.
host:
	$(CARGO) build --release -p blocklab

## build: host and plugins.
build: host plugins

## demo-plugins: only the two plugins examples/quick.toml runs, so the demo
## needs neither the Python nor the JavaScript toolchain.
DEMO_PLUGINS := kv-basic kv-passthrough
demo-plugins: deps-wasm
	$(call rust-plugins,$(DEMO_PLUGINS))

## demo: build the host and the demo's plugins, run the quick campaign on
## the embedded target, print its comparison, then serve the web UI on the
## results (Ctrl-C stops it). `make demo SERVE=0` stops after the tables.
demo: host demo-plugins
	$(BLOCKLAB) campaign examples/quick.toml --data $(CURDIR)/blocklab-data
ifneq ($(SERVE),0)
	@echo "serving the results at http://$(DEMO_LISTEN)/ (Ctrl-C stops it; make demo SERVE=0 skips this)"
	$(BLOCKLAB) serve --data $(CURDIR)/blocklab-data --listen $(DEMO_LISTEN)
endif

## deps-net: iproute2 (`ip`, `tc`) for targets in network namespaces
## (docs/network.md); the tests that use them run as root.
deps-net:
	@command -v ip >/dev/null && command -v tc >/dev/null || (apt-get -o DPkg::Lock::Timeout=600 update && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y iproute2)

## deps-valgrind: Debian's valgrind, whose callgrind counts instructions of
## counted runs (`measure.counters = "callgrind"`, docs/method.md).
deps-valgrind:
	@command -v valgrind >/dev/null || (apt-get -o DPkg::Lock::Timeout=600 update && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y valgrind)

## deps-browser: Debian's chromium, playwright-core and axe-core (pinned in
## web/tests/package-lock.json) for the browser tests; no browser download.
deps-browser:
	@command -v chromium >/dev/null || (apt-get -o DPkg::Lock::Timeout=600 update && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y chromium)
	@command -v node >/dev/null || (apt-get -o DPkg::Lock::Timeout=600 update && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y nodejs npm)
	@test -f web/tests/node_modules/playwright-core/package.json -a -f web/tests/node_modules/axe-core/axe.min.js || npm ci --prefix web/tests --no-audit --no-fund

## vendor-web: refresh web/vendor/ from npm (maintainers only; the build
## embeds the committed files and never needs npm).
vendor-web:
	rm -rf $(CARGO_TARGET_DIR)/uplot && mkdir -p $(CARGO_TARGET_DIR)/uplot
	cd $(CARGO_TARGET_DIR)/uplot && npm pack uplot@$(UPLOT_VERSION) && tar xzf uplot-$(UPLOT_VERSION).tgz
	cp $(CARGO_TARGET_DIR)/uplot/package/dist/uPlot.iife.min.js $(CARGO_TARGET_DIR)/uplot/package/dist/uPlot.min.css web/vendor/
	cp $(CARGO_TARGET_DIR)/uplot/package/LICENSE web/vendor/uPlot.LICENSE

## test: the whole suite (formatting and the plugins' clippy first, the host's
## clippy inside its test build, then unit, integration, browser, the fdb
## feature's type-check, the native peers, counted runs under valgrind,
## network namespaces as root, the Slurm executor on a two-node cluster).
test: fmt lint-wasm plugins check-fdb deps-browser deps-python deps-net deps-valgrind peers deps-slurm
	$(LINTED) $(CARGO) test $(HOST_CRATES) --benches --no-run  # the bench: linted and built, not run
	BLOCKLAB_BROWSER_TESTS=1 BLOCKLAB_REQUIRE_GRPCIO=1 BLOCKLAB_REQUIRE_PEERS=1 BLOCKLAB_REQUIRE_NETNS=1 BLOCKLAB_REQUIRE_SLURM=1 BLOCKLAB_REQUIRE_VALGRIND=1 BLOCKLAB_PEERS=$(PEERS_OUT) PYTHON=$(PYTHON) BLOCKLAB_PLUGINS=$(PLUGIN_OUT) $(LINTED) $(CARGO) test $(HOST_CRATES) --no-fail-fast
	$(CARGO) test $(addprefix -p ,$(notdir $(wildcard plugins/adapters/*))) --no-fail-fast  # adapters' pure logic, natively
	$(CARGO) test -p blocklab-sdk --lib --no-fail-fast  # the SDK's pure logic (the env.random pool), natively

## bench-boundary: per-call cost of the plugin boundary, sync against async
## host imports, beside wasmtime-style reference calls (docs/benchmarks.md).
bench-boundary: plugins
	BLOCKLAB_PLUGINS=$(PLUGIN_OUT) $(CARGO) bench -p blocklab --bench boundary

## bench-precision: the precision proof (docs/benchmarks.md): A/A campaigns
## of examples/precision.toml with one core kept busy, then campaigns with a
## 2% slowdown injected; CAMPAIGNS (20) and DETECTIONS (10) per workload.
## PRECISION_PLAN=examples/precision-duet.toml benchmarks the duet design.
CAMPAIGNS ?= 20
DETECTIONS ?= 10
PRECISION_PLAN ?= examples/precision.toml
bench-precision: host
	BLOCKLAB_PRECISION_PLAN=$(PRECISION_PLAN) mk/bench-precision.sh $(BLOCKLAB) $(CAMPAIGNS) $(DETECTIONS)

## bench-compare: campaign against campaign, A/A: PAIRS (40) pairs of
## campaigns of examples/aa-builtin.toml compared with `blocklab compare`;
## the share of rows with no change is the intervals' coverage
## (docs/benchmarks.md, "Campaign against campaign").
PAIRS ?= 40
bench-compare: host
	mk/bench-compare.sh $(BLOCKLAB) $(PAIRS)

## lint: formatting and clippy -D warnings (host, store, SDK and every plugin
## crate). `make test` lints the same crates, the host's inside its test build.
HOST_CRATES := -p blocklab -p blocklab-store -p blocklab-kv-contract -p blocklab-catalog -p blocklab-ingest
lint: fmt lint-wasm
	$(CARGO) clippy $(HOST_CRATES) --all-targets -- -D warnings
	$(CARGO) clippy -p blocklab --features fdb --all-targets -- -D warnings

fmt:
	$(CARGO) fmt --all --check

lint-wasm: deps-wasm
	$(CARGO) clippy --target $(WASM_TARGET) -p blocklab-sdk $(addprefix -p ,$(PLUGIN_NAMES)) -- -D warnings

# clippy-driver as the workspace members' compiler, which is how `cargo
# clippy` itself runs it (CLIPPY_ARGS is its argument list), but inside a
# real build: `make test` then compiles the dependencies once, instead of
# once to check and once to build (docs/benchmarks.md, "Where `make test`
# spends its time"). mk/fdb.mk's check uses it too.
LINTED := RUSTC_WORKSPACE_WRAPPER=clippy-driver CLIPPY_ARGS=-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__

include mk/fdb.mk
include mk/peers.mk
include mk/slurm.mk
