"""Runs llama_lsp_decode_loop (native/bench/decode_loop.cpp): llama.cpp's plain greedy loop, no engine."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from importlib import resources
from pathlib import Path
from typing import Any

BINARY = "llama_lsp_decode_loop"
OVERRIDE = "LLAMA_LSP_DECODE_LOOP"


def find_decode_loop() -> Path:
    """The program installed beside lsp_server (or named by $LLAMA_LSP_DECODE_LOOP)."""
    override = os.environ.get(OVERRIDE)
    path = Path(override) if override else Path(str(resources.files("lsp_server") / "bin" / BINARY))
    if not path.is_file():
        raise SystemExit(f"bench: {path} is missing; run `make setup` to build it (or set {OVERRIDE})")
    return path


def decode_loop(
    binary: Path,
    model: Path,
    prompt: str,
    n_predict: int,
    n_threads: int,
    n_threads_batch: int,
    flash_attn: str,
) -> dict[str, Any]:
    """Returns {"n_prompt", "n_generated", "decode_s", "tokens"} from one run of the program."""
    with tempfile.NamedTemporaryFile("w", suffix=".txt", encoding="utf-8") as prompt_file:
        prompt_file.write(prompt)
        prompt_file.flush()
        command = [binary, model, prompt_file.name, n_predict, n_threads, n_threads_batch, flash_attn]
        done = subprocess.run(
            [str(arg) for arg in command], capture_output=True, text=True, timeout=600, check=False
        )
    if done.returncode != 0:
        raise RuntimeError(f"{binary.name} failed ({done.returncode}): {done.stderr.strip()}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result
