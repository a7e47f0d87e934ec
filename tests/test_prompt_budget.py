"""The stable prefix (system prompt and tools) as the default model reads it, held to a token budget.

Every first answer reads these tokens and every slot's cache holds them, so a tool or a description that
grows them is a cost for every request: this test makes that a decision rather than a drift.
"""

from __future__ import annotations

from pathlib import Path

from lsp_server.assistant.prompts import system_message
from lsp_server.assistant.tools.schemas import TOOL_NAMES, schemas_for

from .conftest import open_engine

# Measured with qwen2.5-coder-1.5b's template: 457 (771 with the six described tools of before; on the
# eval's 30 Fix tasks both passed 10, and Document 5 of 5 with the four, 2026-12-04).
STABLE_PREFIX_BUDGET = 460


def test_the_system_prompt_and_tools_fit_the_budget_with_the_default_models_template(
    default_model_path: Path,
):
    engine = open_engine(default_model_path, n_slots=1)
    try:
        question = {"role": "user", "content": "What does this do?"}
        rendered = engine.tokenize(
            {"messages": [system_message(), question], "tools": schemas_for(TOOL_NAMES)}
        )
        prefix = rendered["prompt"][: rendered["prompt"].index("What does this do?")]
        # The prefix ends with the question's own header; everything before it is the same for every request.
        stable = prefix[: prefix.rindex("<|im_start|>user")]
        n_stable = len(engine.tokenize({"text": stable, "parse_special": True})["tokens"])
    finally:
        engine.close()
    for name in TOOL_NAMES:  # the template declared every tool
        assert f'"name": "{name}"' in stable
    assert n_stable <= STABLE_PREFIX_BUDGET, f"system prompt and tools are {n_stable} tokens"
    assert n_stable > 200, stable  # the tools were rendered at all
