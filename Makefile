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
