# The two newcomer commands:
#   make demo   the main job on the bundled example workspace, jailed
#   make test   the whole test suite
# Each installs its own dependencies (scripts/install-deps) and builds what it needs.

BUILD ?= build
MESON_OPTS ?=

.PHONY: all deps build demo test test-asan test-asan-all soak fuzz bench conformance deb clean

all: build

# What install-deps installs: everything, or for `make demo` only what the
# demo needs (the modal bridge's npm packages, docker and sshd are for tests).
DEPS ?= all
demo: DEPS = demo

deps:
	@./scripts/install-deps $(DEPS)

$(BUILD)/build.ninja:
	@meson setup $(BUILD) $(MESON_OPTS) >/dev/null

build: deps $(BUILD)/build.ninja
	@ninja -C $(BUILD) >/dev/null || ninja -C $(BUILD)

demo: build
	@./scripts/demo $(BUILD)

test: build
	@./scripts/run-tests $(BUILD)

test-asan: deps
	@[ -f build-asan/build.ninja ] || meson setup build-asan -Db_sanitize=address,undefined -Db_lundef=false >/dev/null
	@ninja -C build-asan >/dev/null || ninja -C build-asan
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ./scripts/run-tests build-asan --no-suite other-backends $(ASAN_SKIP)

# CI's run leaves out the as-user twins whose code is the root run's
# (tests/integration/meson.build says which run); this one runs them all.
ASAN_SKIP ?= --no-suite as-user-twin
test-asan-all: ASAN_SKIP =
test-asan-all: test-asan

# Minutes of mixed load with faults; fails on growth (tests/soak/soak.py).
SOAK_SECONDS ?= 600
soak: build
	@VECTORA_BUILD_ROOT=$(abspath $(BUILD)) SOAK_SECONDS=$(SOAK_SECONDS) python3 tests/soak/soak.py

bench: build
	@./scripts/run-bench $(BUILD)

# The Debian package: build-deb/vectora-sandbox_VERSION_ARCH.deb (needs
# dpkg-dev and debhelper; .ci/run lints, installs and exercises it).
deb:
	@./scripts/install-deps deb
	@./scripts/build-deb build-deb

conformance: build
	@../shared/conformance/run-toml-test $(BUILD)/tests/toml-test-decoder

clean:
	rm -rf build build-asan build-fuzz build-deb
