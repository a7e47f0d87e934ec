"""The `llama-lsp` command end to end, as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import lsp_server
from lsp_server.engine import native

ROOT = Path(__file__).resolve().parent.parent


def llama_lsp(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT
    )


def test_model_list_shows_the_catalogue():
    result = llama_lsp("model", "list")
    assert result.returncode == 0
    for name in ("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b", "gemma3-270m"):
        assert name in result.stdout


def test_version_names_the_package_and_the_native_build():
    result = llama_lsp("--version")
    assert result.returncode == 0
    package, native_library = result.stdout.splitlines()
    assert package == f"llama-lsp {lsp_server.__version__}"
    assert native_library.startswith("native library ")
    assert f"ABI {native.ABI_VERSION}; llama.cpp: vendor/llama.cpp of llama-cpp-python==" in native_library


def test_model_path_prints_the_installed_file(test_model_path):
    result = llama_lsp("model", "path", "qwen2.5-coder-0.5b")
    assert result.returncode == 0
    assert result.stdout.strip() == str(test_model_path)


def test_a_missing_model_is_an_error_that_names_the_fix():
    result = llama_lsp("ask", "examples/inventory.py", "hi", "--model", "/nonexistent/model.gguf")
    assert result.returncode == 1
    assert "llama-lsp model install" in result.stderr  # shown by the server, relayed by the client


def test_a_native_library_that_cannot_be_opened_is_an_error_that_names_the_fix(test_model_path, tmp_path):
    # It used to leave `ask` waiting forever: the load failed with an error the server did not expect.
    broken = tmp_path / "libllama_lsp_native.so"
    broken.write_text("not a library")
    (tmp_path / "llama_lsp.h").write_text(native._find_library()[1].read_text())  # the real declarations
    for library in (tmp_path / "missing" / "libllama_lsp_native.so", broken):
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "lsp_server",
                "ask",
                "examples/inventory.py",
                "hi",
                "--model",
                str(test_model_path),
            ],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=ROOT,
            env={**os.environ, "LLAMA_LSP_NATIVE_LIB": str(library)},
        )
        assert result.returncode == 1, result.stderr
        assert "could not open the native library" in result.stderr and "make setup" in result.stderr


def test_ask_goes_through_the_server_and_reports_stats(test_model_path, tmp_path):
    sample = tmp_path / "inventory.py"
    sample.write_text((ROOT / "examples" / "inventory.py").read_text())
    result = llama_lsp(
        "ask",
        str(sample),
        "What does restock do?",
        "--range",
        "23:27",
        "--action",
        "explain",
        "--model",
        "qwen2.5-coder-0.5b",
        "--json",
        "--max-tokens",
        "80",
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["answer"]["content"].strip()
    assert report["answer"]["stats"]["nPrompt"] > 100
    explanation = report["action"]["command"]["arguments"][0]
    assert explanation["content"].strip() and explanation["conversationId"]
    assert sample.read_text() == (ROOT / "examples" / "inventory.py").read_text()  # nothing written


def test_ask_streams_the_answer_as_text_with_a_stats_line(test_model_path, tmp_path):
    sample = tmp_path / "inventory.py"
    sample.write_text((ROOT / "examples" / "inventory.py").read_text())
    result = llama_lsp(
        "ask", str(sample), "Name one function.", "--model", "qwen2.5-coder-0.5b", "--max-tokens", "40"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip()
    assert "prompt tokens" in result.stderr and "reused" in result.stderr
