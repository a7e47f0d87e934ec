"""Failing tests as diagnostics (`testDiagnostics`) in real headless Neovim, through the plugin, against
the real server: in a folder that is not trusted no test runs; trusted, `:write` shows the failures, the
code actions there offer Fix, and a fix clears them; untrusted again, the failures go.

The steps live in editors/nvim/tests/test_diagnostics_test.lua; the project is the one
tests/test_failure_diagnostics.py checks the server with.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from .conftest import ROOT, TEST_MODEL
from .test_failure_diagnostics import PYTEST_TESTS, SHOP
from .test_nvim import BIN, neovim_dirs, run_script

SCRIPT = ROOT / "editors" / "nvim" / "tests" / "test_diagnostics_test.lua"
STEPS = [
    "setup with testDiagnostics = true, then attach",
    "in a folder that is not trusted, :write runs no tests",
    ":LlamaTrust, then :write shows the failures on the code under test and on the tests",
    "the code actions on `def total` offer Fix, about that failure",
    "fixed and written: test_total's failures go, test_too_much's stay",
    ":LlamaUntrust turns the tests off in the server, which clears their failures",
]


def test_failing_tests_show_as_diagnostics_in_neovim(test_model_path: Path, tmp_path: Path):
    project = tmp_path / "shop"
    project.mkdir()
    (project / "shop.py").write_text(SHOP)
    (project / "test_shop.py").write_text(PYTEST_TESTS)
    env = {name: value for name, value in os.environ.items() if not name.startswith("LLAMA_LSP_")}
    env.update(
        LLAMA_LSP_CMD=json.dumps([str(BIN / "llama-lsp"), "--stdio"]),
        LLAMA_LSP_MODEL=TEST_MODEL,
        LLAMA_LSP_CACHE=str(tmp_path / "cache"),
        LLAMA_LSP_WORKSPACE=str(project),
        **neovim_dirs(tmp_path),
    )
    run_script(env, project, STEPS, timeout=240, script=SCRIPT)
    # The tests ran on a copy: the project holds its own two files, and what the buffer wrote.
    assert sorted(p.name for p in project.iterdir()) == ["shop.py", "test_shop.py"]
    assert (project / "shop.py").read_text() == SHOP.replace("sum(prices) + 1", "sum(prices)")
