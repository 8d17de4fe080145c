# weft: `make demo` shows it working, `make test` runs every test, `make bench` measures.
# Each installs the Debian packages it needs first (scripts/install-deps).
# Build trees: build/release (Release, warnings as errors; the benchmarks only once `make
# bench` asked for them) and build/asan (clang, ASan+UBSan, line tables for the sanitizers'
# reports: the tests again, and the libFuzzer targets, which share its libraries rather
# than compiling them a third time).

JOBS ?= $(shell nproc)
FUZZ_SECONDS ?= 10
CMAKE_COMMON := -G Ninja -DWEFT_WERROR=ON

.PHONY: all deps format-check release asan fuzz test unit-tests asan-tests fuzz-tests demo bench clean

all: release

deps:
	@scripts/install-deps --check 2>/dev/null || scripts/install-deps

build/release/build.ninja: | deps
	cmake -S . -B build/release $(CMAKE_COMMON) -DCMAKE_BUILD_TYPE=Release -DWEFT_BENCH=OFF

build/asan/build.ninja: | deps
	CC=clang CXX=clang++ cmake -S . -B build/asan $(CMAKE_COMMON) -DCMAKE_BUILD_TYPE=Debug \
	  -DCMAKE_CXX_FLAGS_DEBUG=-gline-tables-only -DWEFT_FUZZ=ON -DWEFT_BENCH=OFF

release: build/release/build.ninja
	ninja -C build/release -j $(JOBS)

asan: build/asan/build.ninja
	ninja -C build/asan -j $(JOBS)

fuzz: build/asan/build.ninja
	ninja -C build/asan -j $(JOBS) fuzz_targets

unit-tests: release
	cd build/release && ctest --output-on-failure -j $(JOBS)

asan-tests: asan
	cd build/asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j $(JOBS)

fuzz-tests: fuzz
	JOBS=$(JOBS) scripts/run-fuzzers build/asan $(FUZZ_SECONDS)

# Seconds: every C++ file as .clang-format says (scripts/check-format --fix rewrites them).
format-check: | deps
	scripts/check-format

test: format-check unit-tests asan-tests fuzz-tests

demo: release
	scripts/demo build/release/weft

bench: build/release/build.ninja
	cmake -S . -B build/release -DWEFT_BENCH=ON > /dev/null
	ninja -C build/release -j $(JOBS)
	bench/run build/release

clean:
	rm -rf build
