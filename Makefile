# rill - the README's commands. Each installs what it needs on a fresh Debian 12 machine.
#   make run    the main job: the seed's model trained (see README)
#   make test   the tests, in a normal build and under ASan+UBSan
#   make build  build only
#   make bench  benchmarks (results go in docs/BENCHMARKS.md by hand)

BUILD      ?= build
BUILD_SAN  ?= build-asan
JOBS       ?= $(shell nproc)
DEB_PKGS   := build-essential cmake pkg-config libopenblas-dev zlib1g-dev libsodium-dev dataset-fashion-mnist \
              ocl-icd-opencl-dev opencl-c-headers pocl-opencl-icd python3-venv
# The project's virtualenv: TensorFlow's checkpoint reader and TensorBoard's event reader, with
# which tests/interop checks that rill's files are read as TensorFlow's (and the benchmarks' baselines).
VENV       := .venv
VENV_PKGS  := tensorflow-cpu tensorboard

.PHONY: all deps venv build build-asan run test test-fast test-asan bench bench-baselines clean format

all: build

deps:
	@scripts/install-deps.sh $(DEB_PKGS)

# Makes $(VENV) and installs $(VENV_PKGS) from PyPI when they are missing; quick when they are there.
venv: deps
	@test -x $(VENV)/bin/python || { echo "creating the virtualenv $(VENV)"; python3 -m venv $(VENV); }
	@$(VENV)/bin/python -c 'import importlib.util as u, sys; \
	  sys.exit(any(u.find_spec(m) is None for m in ("tensorflow", "tensorboard")))' || \
	  { echo "installing into $(VENV): $(VENV_PKGS)"; $(VENV)/bin/pip install -q $(VENV_PKGS); }

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

$(BUILD_SAN)/CMakeCache.txt:
	cmake -S . -B $(BUILD_SAN) -DCMAKE_BUILD_TYPE=Debug -DRILL_SANITIZE=ON

build-asan: deps $(BUILD_SAN)/CMakeCache.txt
	cmake --build $(BUILD_SAN) -j $(JOBS)

# A fresh logdir each time: a logdir with a checkpoint makes the Supervisor go on from it.
run: build
	rm -rf $(BUILD)/run-checkpoint
	scripts/local_cluster.sh $(BUILD) --issync=1 --learning_rate=0.01 --train_steps=20000 --steps_to_validate=2000 --logdir=$(BUILD)/run-checkpoint
	$(BUILD)/examples/local_reload_test --logdir=$(BUILD)/run-checkpoint

# use_tls=0: GCC 12's LeakSanitizer crashes scanning the thread-local storage of the kernel
# libraries PoCL dlopens ("Tracer caught signal 11"); not scanning TLS only makes the check
# stricter (a block held only by a thread-local pointer would be reported).
test: build build-asan venv
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	cd $(BUILD_SAN) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	  LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp:use_tls=0:print_suppressions=0 ctest --output-on-failure -j $(JOBS)

test-fast: build venv
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

bench: build
	scripts/bench.sh $(BUILD)

# TensorFlow and PyTorch from PyPI into the project's virtualenv, for bench/baseline_*.py.
bench-baselines: venv
	$(VENV)/bin/pip install -q numpy torch

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD) $(BUILD_SAN)
