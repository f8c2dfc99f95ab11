# The FoundationDB target (cargo feature `fdb`): its build dependencies and
# its type check. Included by the top-level Makefile; also usable alone:
#   make -f mk/fdb.mk deps-fdb check-fdb
#
# foundationdb-sys runs bindgen over the C headers it ships, which needs
# libclang (libclang-dev) and clang (for the system include paths). libfdb_c
# itself is needed only to link and run the feature: it cannot be installed
# on these machines, so `check-fdb` compiles without linking. See
# docs/fdb.md for a benchmark machine with a cluster.

FDB_APT_PACKAGES := libclang-dev clang
CARGO ?= cargo
# Root on CI and the dev machines; sudo elsewhere.
FDB_SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: deps-fdb check-fdb

# Installs only what is missing, so it is cheap to run every time.
deps-fdb:
	@missing=""; \
	for pkg in $(FDB_APT_PACKAGES); do \
	  dpkg -s $$pkg >/dev/null 2>&1 || missing="$$missing $$pkg"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "deps-fdb: installing$$missing (bindgen for foundationdb-sys)"; \
	  $(FDB_SUDO) apt-get -o DPkg::Lock::Timeout=600 update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(FDB_SUDO) apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends $$missing; \
	fi

# The feature's code is all in the library (the cluster test calls
# `plugin::conformance::against_fdb_cluster`), so a build of the library
# compiles every line of it and links nothing, which needs no libfdb_c. It
# shares the dependencies `make test` builds anyway (a `cargo check` would
# check each of them again: 13 minutes here), and `make test` sets LINTED,
# which lints the code too.
check-fdb: deps-fdb
	$(LINTED) $(CARGO) build -p blocklab --lib --features fdb
