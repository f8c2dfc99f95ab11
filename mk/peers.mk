# Native client peers (peers/, issue 15): the Go programs built offline
# against Debian's grpc-go, and the Python ones run from the source tree.
# Included by the top-level Makefile (`make peers`; `make test` builds them).
#
# Outputs, outside the source tree:
#   $(PEERS_OUT)/go-ingest    peers/go-ingest (grpc-go ingest and unary/echo)
#   $(PEERS_OUT)/minimal-go   peers/examples/minimal.go (workload noop)
#   $(PEERS_OUT)/go-testservice  peers/go-testservice (a grpc-go server of
#                             grpc.testing.TestService, for plugins' own services)
# With the default CARGO_TARGET_DIR a plan names them `target/peers/go-ingest`
# (relative to the plan's directory); the Python peers run as
# `["python3", "peers/py-ingest/ingest.py"]` and need grpcio (deps-python).

PEERS_OUT := $(CARGO_TARGET_DIR)/peers
GO_INGEST := $(PEERS_OUT)/go-ingest
MINIMAL_GO := $(PEERS_OUT)/minimal-go
GO_TESTSERVICE := $(PEERS_OUT)/go-testservice
# Debian's packages: the toolchain, grpc-go and the protobuf runtime it imports.
PEERS_APT_PACKAGES := golang-go golang-google-grpc-dev golang-google-protobuf-dev
PEERS_SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# GOPATH mode against the packages under /usr/share/gocode: no module proxy,
# no network. The build cache stays in the target directory.
PEERS_GO := GO111MODULE=off GOPATH=/usr/share/gocode GOPROXY=off GOFLAGS= GOCACHE=$(PEERS_OUT)/gocache go

.PHONY: peers deps-peers

## peers: the Go peers into $(PEERS_OUT); grpcio for the Python ones.
peers: deps-peers deps-python $(GO_INGEST) $(MINIMAL_GO) $(GO_TESTSERVICE)

# Installs only when `go` or grpc-go's sources are missing.
deps-peers:
	@if ! command -v go >/dev/null || [ ! -d /usr/share/gocode/src/google.golang.org/grpc ] \
	    || [ ! -d /usr/share/gocode/src/google.golang.org/protobuf ]; then \
	  echo "deps-peers: installing $(PEERS_APT_PACKAGES)"; \
	  $(PEERS_SUDO) apt-get -o DPkg::Lock::Timeout=600 update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(PEERS_SUDO) apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends $(PEERS_APT_PACKAGES); \
	fi

$(GO_INGEST): $(wildcard peers/go-ingest/*.go peers/go-ingest/*.s) | deps-peers
	@mkdir -p $(PEERS_OUT)
	cd peers/go-ingest && $(PEERS_GO) build -o $(abspath $@) .

$(GO_TESTSERVICE): $(wildcard peers/go-testservice/*.go) | deps-peers
	@mkdir -p $(PEERS_OUT)
	cd peers/go-testservice && $(PEERS_GO) build -o $(abspath $@) .

$(MINIMAL_GO): peers/examples/minimal.go | deps-peers
	@mkdir -p $(PEERS_OUT)
	cd peers/examples && $(PEERS_GO) build -o $(abspath $@) minimal.go
