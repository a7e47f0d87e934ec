"""MCP tool servers in real headless Neovim, through the plugin (editors/nvim/lua/llama_lsp/mcp.lua).

Against the real server, the test model and a real MCP server written with the SDK (tests/mcp_test_server.py,
run with this Python), configured through `mcpServers` in setup() in a folder the user trusted: a chat
question that the model answers with the read-only `tracker.lookup_ticket` asks nothing; one that makes it
call the write tool `tracker.create_note` asks through vim.ui.select, showing the tool, its server and its
arguments, and the note is written when the user picks "Allow", not when they pick "Deny"; a published
server (the reference filesystem server from npm, `make published-mcp`) lists a folder without asking;
:checkhealth names the servers running with their tool counts. A folder not trusted, whose own
.mcp.json declares a server, starts none. vim.ui.select is replaced as a picker plugin replaces it,
answering later than it is called, so the handler's asynchronous answer is what is tested.

Offline, no server: the handler as Neovim's rpc.lua runs it (in a coroutine), every choice, cancelling and
a failing picker (deny), long arguments cut, the settings an untrusted folder gets, :checkhealth's lines.

The steps live in editors/nvim/tests/mcp_test.lua.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from harness.published_mcp import FILESYSTEM_SERVER, same_folder_every_run

from .conftest import ROOT, TEST_MODEL
from .test_nvim import BIN, neovim_dirs, run_script

SCRIPT = ROOT / "editors" / "nvim" / "tests" / "mcp_test.lua"
MCP_SERVER = ROOT / "tests" / "mcp_test_server.py"

STEPS = [
    "setup in a trusted folder, then attach: the MCP server starts",
    "a read-only tool runs without asking",
    "a published server's tool (the reference filesystem server, from npm) runs without asking",
    "a write tool asks with the tool, its server and its arguments; Allow runs it",
    "Deny: the tool does not run, and the model reads that the user declined",
    ":checkhealth names the MCP servers running, with their tool counts",
    "an untrusted folder: no MCP server starts, neither the setting's nor the folder's .mcp.json",
]

OFFLINE_STEPS = [
    "the question shows the tool, its server and its arguments, and waits for an asynchronous UI",
    "cancelling is deny, and so is a UI that fails",
    "long arguments are cut, and empty ones are an object",
    "an MCP server's empty env goes out as an object; untrusted, no servers go out",
    ":checkhealth's lines: running with the tool count, a failed one with why, tools left out",
]


def test_mcp_consent_offline_steps_in_headless_neovim(tmp_path: Path):
    env = {name: value for name, value in os.environ.items() if not name.startswith("LLAMA_LSP_")}
    run_script({**env, **neovim_dirs(tmp_path)}, tmp_path, OFFLINE_STEPS, timeout=60, script=SCRIPT)


def test_mcp_tools_ask_in_headless_neovim_against_the_real_server(test_model_path: Path, tmp_path: Path):
    notes, project_starts = tmp_path / "notes.txt", tmp_path / "project-starts.txt"
    workspace = same_folder_every_run("llama-lsp-test-nvim-mcp") / "workspace"
    workspace.mkdir()
    (workspace / "standup.py").write_text('TEAM = "platform"\n')
    # Only the two tools the question needs: the test model picks among fewer more reliably.
    tracker = {
        "command": sys.executable,
        "args": [str(MCP_SERVER), "--tools", "lookup_ticket,create_note"],
        "env": {"MCP_TEST_NOTES": str(notes)},
    }
    # A published server as users install it: the reference filesystem server from npm (pinned).
    assert FILESYSTEM_SERVER.exists(), f"{FILESYSTEM_SERVER} is missing: run `make published-mcp`"
    files = {"command": str(FILESYSTEM_SERVER), "args": [str(workspace)]}
    untrusted = tmp_path / "cloned"
    untrusted.mkdir()
    (untrusted / "code.py").write_text("def f(x):\n    return x\n")
    # A cloned repository's own server: it would record its start.
    project_env = {"MCP_TEST_NOTES": str(notes), "MCP_TEST_STARTS": str(project_starts)}
    project_server = {**tracker, "env": project_env}
    (untrusted / ".mcp.json").write_text(json.dumps({"mcpServers": {"cloned": project_server}}))

    env = {
        name: value for name, value in os.environ.items() if not name.startswith(("LLAMA_LSP_", "MCP_TEST_"))
    }
    env.update(
        LLAMA_LSP_CMD=json.dumps([str(BIN / "llama-lsp"), "--stdio"]),
        LLAMA_LSP_MODEL=TEST_MODEL,
        LLAMA_LSP_CACHE=str(tmp_path / "cache"),
        LLAMA_LSP_WORKSPACE=str(workspace),
        LLAMA_LSP_UNTRUSTED=str(untrusted),
        LLAMA_LSP_MCP_SERVERS=json.dumps({"tracker": tracker, "files": files}),
        MCP_TEST_NOTES=str(notes),
        MCP_TEST_STARTS=str(project_starts),
        **neovim_dirs(tmp_path),
    )
    run_script(env, workspace, STEPS, timeout=240, script=SCRIPT)
    # Once, from the allowed call only.
    assert notes.read_text().count("standup") == 1, notes.read_text()
    assert not project_starts.exists()
