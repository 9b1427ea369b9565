# PEAT — the commands the README starts with. Each target installs what is
# missing (scripts/install-deps.sh, quick when all is present), configures,
# builds and runs.
BUILD_DIR ?= build
JOBS ?= $(shell nproc)
CMAKE_ARGS ?=

.PHONY: all deps configure build demo test bench clean

all: build

deps:
	@./scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_ARGS) >/dev/null

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

# The end-to-end demo on its embedded default data.
demo: build
	@./scripts/demo.sh $(BUILD_DIR)

# Every test suite; exits non-zero on any failure.
test: build
	@cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) --timeout 900

# Every benchmark; appends JSON lines to benchmarks/results/<benchmark>.jsonl.
bench: build
	@./benchmarks/run_all.sh $(BUILD_DIR)

clean:
	@rm -rf $(BUILD_DIR)

# Unit and C API tests under ASan+UBSan, then under TSan (presets asan, tsan).
.PHONY: test-sanitize
test-sanitize: deps
	@for preset in asan tsan; do \
	  cmake --preset $$preset >/dev/null && cmake --build --preset $$preset -j $(JOBS) && \
	  ctest --preset $$preset -j $(JOBS) || exit 1; \
	done

# Rewrites the committed ABI baseline (abi/libpeat.abi) from the current build:
# the public types only, the opaque handles declaration-only (scripts/abi-dump.sh).
.PHONY: abi-baseline
abi-baseline: build
	@./scripts/abi-dump.sh $(BUILD_DIR)/lib/libpeat.so abi/libpeat.abi
	@echo "wrote abi/libpeat.abi"

# libFuzzer targets (preset fuzz, clang-15 + ASan + UBSan), each fuzzed for
# FUZZ_SECONDS (default 300); figures in build-fuzz/fuzz-results.jsonl.
FUZZ_SECONDS ?= 300
.PHONY: fuzz
fuzz: deps
	@JOBS=$(JOBS) ./scripts/fuzz.sh $(FUZZ_SECONDS)

# The 60 s load run under ThreadSanitizer: 16 threads recording and dispatching
# (tests/load/stress.cpp), built in the tsan preset. STRESS_SECONDS to change.
STRESS_SECONDS ?= 60
.PHONY: stress
stress: deps
	@cmake --preset tsan >/dev/null && cmake --build --preset tsan -j $(JOBS) --target peat_stress
	@TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$(CURDIR)/tests/sanitizers/tsan.supp" \
	  ./build-tsan/tests/load/peat_stress $(STRESS_SECONDS) /tmp/peat-stress-$$$$ 16
