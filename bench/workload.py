"""The bench's inputs: repo files cut to a token budget, and chat conversations about them."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lsp_server.assistant import prompts
from lsp_server.engine.native import NativeEngine

ROOT = Path(__file__).resolve().parent.parent
Messages = list[dict[str, Any]]

QUESTIONS = (
    "What does this code do, in two sentences?",
    "Which function is the most complex, and why?",
    "Where could an exception escape unhandled?",
    "What would you test first?",
    "Which names are unclear?",
)
FOLLOW_UP = "Explain that in more detail, with an example."


def count_tokens(engine: NativeEngine, text: str) -> int:
    return len(engine.tokenize({"text": text})["tokens"])


def document(engine: NativeEngine, paths: Sequence[Path], n_tokens: int) -> str:
    """The files, each after a header line, cut at the first line boundary reaching n_tokens tokens."""
    lines: list[str] = []
    for path in paths:
        lines.append(f"# ---- {path.relative_to(ROOT)}")
        lines.extend(path.read_text().splitlines())
    low, high = 1, len(lines)
    while low < high:  # the fewest lines that reach the budget (all of them if none do)
        middle = (low + high) // 2
        if count_tokens(engine, "\n".join(lines[:middle])) >= n_tokens:
            high = middle
        else:
            low = middle + 1
    return "\n".join(lines[:low]) + "\n"


def chat(name: str, text: str, questions: Sequence[str], answers: Sequence[str] = ()) -> Messages:
    """System prompt, the document, then the user's questions with the assistant's answers between them."""
    messages = [prompts.system_message(), prompts.document_message(name, text)]
    for i, question in enumerate(questions):
        messages.append({"role": "user", "content": question})
        if i < len(answers):
            messages.append({"role": "assistant", "content": answers[i]})
    return messages
