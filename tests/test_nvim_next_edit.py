"""Next-edit suggestions in real headless Neovim, through the plugin (lua/llama_lsp/next_edit.lua).

Against the real server and the test model: rename a parameter in Insert mode, see the rest of the rename
suggested with extmarks on the line it applies to (away from the cursor), <Tab> moves the cursor there,
<Tab> applies it, and the server counts it shown and accepted; <Esc> dismisses the same suggestion in a
second file (the buffer unchanged, the server counts it rejected); with nothing shown <Tab> indents as
before. A failure carries the server's log of each next-edit request (its outcome and figures).

Offline, against the in-process stand-in (no model), what the plugin sends and shows exactly: one request
per pause in typing, with the buffer's LSP version and the cursor in UTF-16, cancelled by typing; the
extmarks, highlight groups, sign and hint; the keys only while a suggestion is shown, calling through
the mapping they hide; suggestions that do not fit the buffer, stale answers, errors; the settings.

The steps live in editors/nvim/tests/next_edit_test.lua.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from .conftest import ROOT, TEST_MODEL
from .test_nvim import BIN, neovim_dirs, run_script

SCRIPT = ROOT / "editors" / "nvim" / "tests" / "next_edit_test.lua"

PRICES = """\
def total_price(items, tax_rate):
    subtotal = sum(item.price for item in items)
    return subtotal * (1 + tax_rate)
"""

STEPS = [
    "setup, then attach",
    "rename a parameter: the rest of the rename is suggested on line 3; <Tab> goes there, <Tab> accepts",
    "<Esc> dismisses a suggestion: the buffer stays as it is, and the server counts it rejected",
    "with nothing shown <Tab> inserts an indent as before",
]

OFFLINE_STEPS = [
    "a pause in typing asks once, with the buffer's LSP version and the cursor in UTF-16",
    "the suggestion shows where it applies, away from the cursor; <Tab> goes there, <Tab> accepts",
    "<Esc> dismisses as rejected and still does what it does; so does a change elsewhere",
    "what does not fit the buffer, a stale answer, null and errors show nothing",
    "with nothing shown <Tab> and <Esc> do what they did, another mapping's too",
    "inline completion's ghost text keeps <Tab> while both are shown",
    "nextEdit = false asks nothing; the keys are set in setup()",
    ":checkhealth says whether next-edit suggestions are on, and their keys",
]


def test_next_edit_offline_steps_in_headless_neovim(tmp_path: Path):
    env = {name: value for name, value in os.environ.items() if not name.startswith("LLAMA_LSP_")}
    run_script({**env, **neovim_dirs(tmp_path)}, tmp_path, OFFLINE_STEPS, timeout=90, script=SCRIPT)


def test_next_edit_rename_in_headless_neovim_against_the_real_server(test_model_path: Path, tmp_path: Path):
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "prices.py").write_text(PRICES)
    (workspace / "orders.py").write_text(PRICES)
    env = {name: value for name, value in os.environ.items() if not name.startswith("LLAMA_LSP_")}
    env.update(
        LLAMA_LSP_CMD=json.dumps([str(BIN / "llama-lsp"), "--stdio"]),
        LLAMA_LSP_MODEL=TEST_MODEL,
        LLAMA_LSP_CACHE=str(tmp_path / "cache"),
        LLAMA_LSP_WORKSPACE=str(workspace),
        **neovim_dirs(tmp_path),
    )
    try:
        run_script(env, workspace, STEPS, timeout=600, script=SCRIPT)
    except AssertionError as failure:
        log = next_edit_log(tmp_path)
        raise AssertionError(f"{failure}\n--- the server's next-edit log\n{log}") from None


def next_edit_log(tmp_path: Path) -> str:
    """The server's log lines about next-edit requests, from Neovim's LSP log (the server's stderr)."""
    log = tmp_path / "state" / "nvim" / "lsp.log"
    if not log.exists():
        return f"({log} is missing)"
    lines = [line for line in log.read_text(errors="replace").splitlines() if "next_edit" in line]
    return "\n".join(lines[-20:]) or "(no next-edit lines)"
