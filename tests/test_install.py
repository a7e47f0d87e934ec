"""The package as a user installs it: `make dist`'s wheel in a clean virtualenv, run from another folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import lsp_server
from lsp_server.engine import native

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def installed(built_wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtualenv outside the checkout with only the wheel and its dependencies; returns its bin/."""
    venv = tmp_path_factory.mktemp("user") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    # --only-binary: nothing compiles, the native library comes built inside the wheel.
    done = subprocess.run(
        [
            venv / "bin" / "python",
            *["-m", "pip", "install", "-q", "--disable-pip-version-check", "--only-binary=:all:"],
            built_wheel,
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return venv / "bin"


def run_installed(
    bin_dir: Path, cwd: Path, *args: str, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    # No PYTHONPATH and a folder outside the checkout: only the installed package can answer.
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run(
        [str(bin_dir / "llama-lsp"), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


def test_the_wheel_holds_the_native_library_and_no_build_files(built_wheel: Path):
    assert built_wheel.name == f"llama_lsp-{lsp_server.__version__}-py3-none-linux_x86_64.whl"
    names = zipfile.ZipFile(built_wheel).namelist()
    assert "lsp_server/libllama_lsp_native.so" in names
    assert "lsp_server/llama_lsp.h" in names
    assert not [name for name in names if name.startswith(("tests/", "build/", "native/", "editors/"))]


def test_the_installed_package_runs_from_another_folder(
    installed: Path, tmp_path: Path, test_model_path: Path
):
    library = subprocess.run(
        [
            installed / "python",
            "-c",
            "from lsp_server.engine import native; print(native._find_library()[0])",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert library.returncode == 0, library.stderr
    assert Path(library.stdout.strip()).is_relative_to(installed.parent), library.stdout

    version = run_installed(installed, tmp_path, "--version")
    assert version.returncode == 0, version.stderr
    assert version.stdout.splitlines()[0] == f"llama-lsp {lsp_server.__version__}"
    assert f"ABI {native.ABI_VERSION};" in version.stdout.splitlines()[1]

    listing = run_installed(installed, tmp_path, "model", "list")
    assert listing.returncode == 0, listing.stderr
    assert "qwen2.5-coder-0.5b" in listing.stdout and "installed" in listing.stdout

    source = tmp_path / "prices.py"
    source.write_text("def total(prices):\n    return sum(prices)\n")
    answer = run_installed(
        installed,
        tmp_path,
        "ask",
        "prices.py",
        "What does total return?",
        *["--model", "qwen2.5-coder-0.5b", "--max-tokens", "48", "--json"],
        timeout=300,
    )
    assert answer.returncode == 0, answer.stderr
    reply = json.loads(answer.stdout)["answer"]
    assert reply["content"].strip(), reply
    assert reply["stats"]["nPrompt"] > 0 and reply["stats"]["nGenerated"] > 0, reply
