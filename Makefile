# rill - the README's commands. Each installs what it needs on a fresh Debian 12 machine.
#   make run    the main job: the seed's model trained (see README)
#   make test   the tests: gcc -O3 and gcc under ASan+UBSan (all), clang -O3 (a quick subset;
#               every target compiled), all with RILL_WERROR=ON; lists the skipped tests last;
#               then the Python tests and every fuzz target for 20 s
#   make build  build only
#   make install PREFIX=P   install headers, libraries, rill.pc, the CMake package, programs
#   make fuzz   the libFuzzer targets (fuzz/), FUZZ_SECONDS each (default 60); docs/ARCHITECTURE.md
#   make bench  benchmarks (results go in docs/BENCHMARKS.md by hand)
#   make python       the Python package (pyproject.toml) into the virtualenv .venv
#   make test-python  its tests (pytest python/tests) in .venv
#   make soak   a long cluster run under ASan with a stranger at the ps's port (not in make test)

BUILD      ?= build
BUILD_SAN  ?= build-asan
BUILD_CLANG ?= build-clang
BUILD_FUZZ ?= build-fuzz
# pyproject.toml's build-dir (scikit-build-core's CMake builds, one per wheel tag).
BUILD_PY   := build-python
PREFIX     ?= /usr/local
JOBS       ?= $(shell nproc)
# openmpi-bin, slurm-wlm and munge: the real launchers tests/distributed/test_launchers.sh runs
# (mpirun, and a single-node Slurm cluster the test starts itself).
DEB_PKGS   := build-essential cmake pkg-config libdnnl-dev zlib1g-dev libsodium-dev dataset-fashion-mnist \
              ocl-icd-opencl-dev opencl-c-headers pocl-opencl-icd python3-venv python3-dev clang binutils qemu-user \
              openmpi-bin slurm-wlm munge libjpeg62-turbo-dev libpng-dev
# The project's virtualenv: TensorFlow's checkpoint reader and TensorBoard's event reader, with
# which tests/interop checks that rill's files are read as TensorFlow's (and the benchmarks' baselines).
VENV       := .venv
# TensorFlow 2.15: the last release whose tf.compat.v1 still has all of TF 1.x's model-building
# API that published programs use (tf.estimator, tf.layers on Keras 2); python/tests/test_programs.py
# runs them on it as the reference. tf-slim is TF 1.15's contrib.layers/framework, maintained
# (programs/tf_reference.py maps tf.contrib onto it). numpy below 2 (TF 2.15's requirement).
VENV_PKGS  := 'tensorflow-cpu==2.15.1' 'tensorboard<2.16' 'numpy<2' tf-slim

.PHONY: all deps venv build build-werror build-asan build-clang build-fuzz fuzz run test test-fast bench bench-peers bench-baselines \
        python test-python test-python-asan pyroot test-python-dev install clean format soak

all: build

deps:
	@scripts/install-deps.sh $(DEB_PKGS)

# Makes $(VENV) and installs $(VENV_PKGS) from PyPI when they are missing or another TensorFlow is
# there; quick when they are.
venv: deps
	@test -x $(VENV)/bin/python || { echo "creating the virtualenv $(VENV)"; python3 -m venv $(VENV); }
	@$(VENV)/bin/python -c 'import importlib.util as u, importlib.metadata as m, sys; \
	  sys.exit(any(u.find_spec(x) is None for x in ("tensorflow", "tensorboard", "tf_slim")) or \
	           not m.version("tensorflow-cpu").startswith("2.15."))' 2>/dev/null || \
	  { echo "installing into $(VENV): $(VENV_PKGS)"; $(VENV)/bin/pip install -q $(VENV_PKGS); }

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release

# A user's build: warnings are shown, never fatal (RILL_WERROR stays as the cache has it: OFF on
# a fresh clone).
build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

# The tests' builds make every warning an error.
build-werror: deps $(BUILD)/CMakeCache.txt
	cmake -S . -B $(BUILD) -DRILL_WERROR=ON >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

$(BUILD_SAN)/CMakeCache.txt:
	cmake -S . -B $(BUILD_SAN) -DCMAKE_BUILD_TYPE=Debug -DRILL_SANITIZE=ON -DRILL_WERROR=ON

build-asan: deps $(BUILD_SAN)/CMakeCache.txt
	cmake --build $(BUILD_SAN) -j $(JOBS)

$(BUILD_CLANG)/CMakeCache.txt:
	CC=clang cmake -S . -B $(BUILD_CLANG) -DCMAKE_BUILD_TYPE=Release -DRILL_WERROR=ON

build-clang: deps $(BUILD_CLANG)/CMakeCache.txt
	cmake --build $(BUILD_CLANG) -j $(JOBS)

# The fuzz targets (fuzz/fuzz_*.c) and the library under them, built by clang with libFuzzer's
# coverage, ASan and UBSan (RILL_FUZZ=ON); only the targets and what they link are built.
$(BUILD_FUZZ)/CMakeCache.txt:
	CC=clang cmake -S . -B $(BUILD_FUZZ) -DCMAKE_BUILD_TYPE=Debug -DRILL_FUZZ=ON -DRILL_WERROR=ON \
	  -DRILL_BUILD_TESTS=OFF -DRILL_BUILD_EXAMPLES=OFF -DRILL_BUILD_TOOLS=OFF -DRILL_BUILD_BENCH=OFF \
	  -DCMAKE_DISABLE_FIND_PACKAGE_OpenCL=ON

FUZZ_TARGETS = $(patsubst fuzz/%.c,%,$(wildcard fuzz/fuzz_*.c))
build-fuzz: deps $(BUILD_FUZZ)/CMakeCache.txt
	cmake --build $(BUILD_FUZZ) -j $(JOBS) --target $(FUZZ_TARGETS) make_corpus

# Each target runs FUZZ_SECONDS on a scratch copy of its seed corpus (fuzz/corpus/<target>),
# FUZZ_JOBS at a time; any crash, leak, UBSan report, broken invariant or hang fails.
FUZZ_SECONDS ?= 60
FUZZ_JOBS    ?= 2
fuzz: build-fuzz
	scripts/fuzz.sh $(BUILD_FUZZ) $(FUZZ_SECONDS) $(FUZZ_JOBS)

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

# A fresh logdir each time: a logdir with a checkpoint makes the Supervisor go on from it.
run: build
	rm -rf $(BUILD)/run-checkpoint
	scripts/local_cluster.sh $(BUILD) --issync=1 --learning_rate=0.01 --train_steps=20000 --steps_to_validate=2000 --logdir=$(BUILD)/run-checkpoint
	$(BUILD)/examples/local_reload_test --logdir=$(BUILD)/run-checkpoint

# The clang build runs the tests of one process (core, graph, kernels, runtime, train, build,
# install); the cluster and interop scripts run in the gcc builds. Each ctest run's skipped tests
# are listed, with their reasons, at the end.
# use_tls=0: GCC 12's LeakSanitizer crashes scanning the thread-local storage of the kernel
# libraries PoCL dlopens ("Tracer caught signal 11"); not scanning TLS only makes the check
# stricter (a block held only by a thread-local pointer would be reported).
CLANG_TESTS := ^(core|graph|kernels|runtime|train|build|install)/
# The JUnit file keeps a passing test's whole output, so that scripts/skipped_tests.sh sees every
# "SKIPPED:" line (ctest keeps 1 KiB by default).
CTEST_FLAGS := --test-output-size-passed 1048576
test: build-werror build-asan build-clang venv
	cd $(BUILD) && ctest --output-on-failure --output-junit ctest.xml $(CTEST_FLAGS) -j $(JOBS)
	cd $(BUILD_SAN) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	  LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp:use_tls=0:print_suppressions=0 ctest --output-on-failure --output-junit ctest.xml $(CTEST_FLAGS) -j $(JOBS)
	cd $(BUILD_CLANG) && ctest --output-on-failure --output-junit ctest.xml $(CTEST_FLAGS) -j $(JOBS) -R '$(CLANG_TESTS)'
	@scripts/skipped_tests.sh $(BUILD) $(BUILD_SAN) $(BUILD_CLANG)
	$(MAKE) test-python
	$(MAKE) test-python-asan
	$(MAKE) fuzz FUZZ_SECONDS=20

test-fast: build-werror venv
	cd $(BUILD) && ctest --output-on-failure --output-junit ctest.xml $(CTEST_FLAGS) -j $(JOBS)
	@scripts/skipped_tests.sh $(BUILD)

# The other GEMM libraries bench/bench_gemm compares oneDNN with.
BENCH_PKGS := libopenblas0-pthread libblis4-pthread
bench: build
	@scripts/install-deps.sh $(BENCH_PKGS)
	scripts/bench.sh $(BUILD)

# rill against TensorFlow and PyTorch (bench-baselines installs PyTorch) on issue 10's models: the
# steps, then each Fashion-MNIST model trained to the end in each, speed and test accuracy side by
# side; BENCH_EPOCHS=N trains N epochs (default 5, the recipe's), BENCH_MAX_STEPS=S caps an epoch
# at S steps (a short trial).
bench-peers: build venv bench-baselines python
	scripts/bench_peers.sh $(BUILD)

# Issue 19's bars in one run (scripts/bench_layers.sh): the tf.layers MLP and CNN on rill against
# the same models written by hand on rill, against TensorFlow running the same program and against
# PyTorch, interleaved round by round (BENCH_ROUNDS, default 5), then tf.data against feed_dict.
.PHONY: bench-layers
BENCH_ROUNDS ?= 5
bench-layers: build venv bench-baselines python
	RILL_PY=$(VENV)/bin/python TF_PY=$(VENV)/bin/python TORCH_PY=$(VENV)/bin/python \
	  scripts/bench_layers.sh $(BENCH_ROUNDS)

# TensorFlow and PyTorch from PyPI into the project's virtualenv, for bench/baseline_*.py.
bench-baselines: venv
	$(VENV)/bin/pip install -q 'numpy<2' torch

# The Python package into $(VENV): scikit-build-core configures the project's CMake in
# $(BUILD_PY)/<wheel tag> and builds the extension with warnings as errors, as the tests' builds
# are. Without build isolation, from the build requirements installed in $(VENV): pip's isolated
# build environment is a new directory each time, and scikit-build-core clears the CMake build
# of a changed environment, so only this way does a second install compile only what changed.
PY_BUILD_PKGS := scikit-build-core>=0.10 numpy
python: venv
	@$(VENV)/bin/python -c 'import scikit_build_core, numpy' 2>/dev/null || \
	  { echo "installing into $(VENV): $(PY_BUILD_PKGS)"; $(VENV)/bin/pip install -q $(foreach p,$(PY_BUILD_PKGS),'$(p)'); }
	CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) $(VENV)/bin/pip install -q --no-build-isolation \
	  --config-settings=cmake.define.RILL_WERROR=ON .

# The pytest script, not `python -m pytest`, so that the current directory is not on sys.path and
# the installed package is the one imported.
test-python: python
	@$(VENV)/bin/python -c 'import pytest' 2>/dev/null || { echo "installing into $(VENV): pytest"; $(VENV)/bin/pip install -q pytest; }
	RILL_REQUIRE_TF=1 RILL_PROGRAM_CACHE=$(CURDIR)/$(BUILD)/program-outputs $(VENV)/bin/pytest python/tests

# The Python tests again on the extension built with ASan and UBSan ($(BUILD_SAN), Debug): the
# interpreter is not instrumented, so the sanitizers' runtimes are preloaded into it (and into
# the tests' subprocesses, which inherit the environment); leak detection is off, since the
# interpreter itself does not free everything at exit. The package is the source tree's Python
# files with that build's module, first on PYTHONPATH.
SAN_PRELOAD = $$(gcc -print-file-name=libasan.so):$$(gcc -print-file-name=libubsan.so)
test-python-asan: build-asan python
	cmake -S . -B $(BUILD_SAN) -DRILL_BUILD_PYTHON=ON -DPython_EXECUTABLE=$(CURDIR)/$(VENV)/bin/python >/dev/null
	cmake --build $(BUILD_SAN) -j $(JOBS) --target _rill _readers
	rm -rf $(BUILD_SAN)/pyroot && mkdir -p $(BUILD_SAN)/pyroot && cp -r python/rill $(BUILD_SAN)/pyroot/ && \
	  rm -f $(BUILD_SAN)/pyroot/rill/*.c && cp $(BUILD_SAN)/python/_*.so $(BUILD_SAN)/pyroot/rill/
	cd $(BUILD_SAN) && PYTHONPATH=$(CURDIR)/$(BUILD_SAN)/pyroot LD_PRELOAD=$(SAN_PRELOAD) \
	  ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 RILL_EXPECT_SANITIZED=1 \
	  RILL_PROGRAM_CACHE=$(CURDIR)/$(BUILD)/program-outputs \
	  $(CURDIR)/$(VENV)/bin/pytest -p no:cacheprovider $(CURDIR)/python/tests

# Development: the extension built in $(BUILD) and the source tree's Python files (symlinked, so
# edits are live) in $(BUILD)/pyroot, no pip install; `make test-python-dev PYTEST_ARGS=-k\ x`
# runs pytest on it. VENV=/path/to/a/venv shares one virtualenv between work trees (read only).
PYROOT := $(CURDIR)/$(BUILD)/pyroot
PYTEST_ARGS ?=
pyroot: build venv
	cmake -S . -B $(BUILD) -DRILL_BUILD_PYTHON=ON -DPython_EXECUTABLE=$(abspath $(VENV))/bin/python >/dev/null
	cmake --build $(BUILD) -j $(JOBS) --target _rill _readers
	rm -rf $(PYROOT) && mkdir -p $(PYROOT)/rill && ln -s $(CURDIR)/python/rill/* $(PYROOT)/rill/ && \
	  rm -f $(PYROOT)/rill/*.c && cp $(BUILD)/python/_*.so $(PYROOT)/rill/

test-python-dev: pyroot
	@$(VENV)/bin/python -c 'import pytest' 2>/dev/null || $(VENV)/bin/pip install -q pytest
	PYTHONPATH=$(PYROOT) $(abspath $(VENV))/bin/pytest -p no:cacheprovider python/tests $(PYTEST_ARGS)

# 8 workers train asynchronously for SOAK_SECONDS (600) under ASan while a stranger hammers the
# ps's port; no leak, no error in a log, the ps's RSS flat after the warm-up (scripts/soak.sh).
soak: build-asan
	scripts/soak.sh $(BUILD_SAN)

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD) $(BUILD_SAN) $(BUILD_CLANG) $(BUILD_FUZZ) $(BUILD_PY)
