"""The `llama-lsp` command end to end, as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

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


def test_model_path_prints_the_installed_file(test_model_path):
    result = llama_lsp("model", "path", "qwen2.5-coder-0.5b")
    assert result.returncode == 0
    assert result.stdout.strip() == str(test_model_path)


def test_a_missing_model_is_an_error_that_names_the_fix():
    result = llama_lsp("ask", "examples/inventory.py", "hi", "--model", "/nonexistent/model.gguf")
    assert result.returncode == 1
    assert "llama-lsp model install" in result.stderr


def test_ask_streams_an_answer_and_proposes_an_edit(test_model_path, tmp_path):
    sample = tmp_path / "inventory.py"
    sample.write_text((ROOT / "examples" / "inventory.py").read_text())
    result = llama_lsp(
        "ask",
        str(sample),
        "What does restock do?",
        "--model",
        "qwen2.5-coder-0.5b",
        "--edit",
        "Rename the parameter amount of restock to count",
        "--json",
        "--max-tokens",
        "120",
    )
    report = json.loads(result.stdout)
    assert report["answer"]["content"].strip()
    assert report["answer"]["stats"]["n_prompt"] > 100
    attempts = report["edit"]["attempts"]
    assert 1 <= len(attempts) <= 3
    for attempt in attempts:
        assert attempt["finish_reason"] == "tool_calls"
        assert attempt["tool_calls"][0]["name"] == "edit"
        assert {"old_text", "new_text"} <= set(attempt["tool_calls"][0]["arguments"])
    # an edit that applies ends the loop with exit 0; the small test model may fail all three tries
    assert (result.returncode == 0) == ("tool_call" in report["edit"])
    # the edit turn extends the question turn: its prompt starts with what the cache already holds
    assert attempts[0]["stats"]["n_common"] >= report["answer"]["stats"]["n_prompt"] * 0.8
    assert sample.read_text() == (ROOT / "examples" / "inventory.py").read_text()  # never applied unasked
