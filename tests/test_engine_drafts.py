"""Speculative decoding on the real test model: drafts change how fast an answer is written, never which
answer a request gets from a warm or a cold cache, and never what a slot's record says its cells hold.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from lsp_server.engine import native

from .test_engine_reuse import DOCUMENT, ask, assert_same_as_cold, conversation

# A block rewrite, as a Document asks for one: the model copies lines it was shown, so drafts from the
# prompt are accepted.
REWRITE = (
    "Write the function `apply_discount` again with a docstring added, all of it, in one ```python block."
)
REWRITE_TOKENS = 160


def rewrite(engine: native.NativeEngine, slot: str = "", **extra: Any) -> dict[str, Any]:
    request: dict[str, Any] = {"messages": conversation(REWRITE), "max_tokens": REWRITE_TOKENS, **extra}
    if slot:
        request["slot"] = slot
    return engine.generate(request)


def assert_counts(stats: dict[str, Any]) -> None:
    assert stats["n_drafted"] >= stats["n_accepted"] >= 0


def test_a_block_rewrite_drafts_from_the_prompt_and_matches_cold(warm_engine, cold_engine):
    ask(warm_engine, conversation("What does this file do?"), slot="drafts")  # a cache that holds something
    warm = rewrite(warm_engine, slot="drafts")
    assert warm["stats"]["n_reused"] > 0
    assert_counts(warm["stats"])
    # The function is copied: most of the answer comes from accepted drafts.
    assert warm["stats"]["n_accepted"] > warm["stats"]["n_generated"] // 3, warm["stats"]
    cold_engine.clear()
    cold = rewrite(cold_engine)
    assert cold["stats"]["n_reused"] == 0
    assert warm["tokens"] == cold["tokens"], (warm["content"], cold["content"])
    assert warm["stats"]["n_drafted"] == cold["stats"]["n_drafted"]  # drafts are a function of the request


def test_a_chat_follow_up_with_drafts_matches_cold(warm_engine, cold_engine):
    first = ask(warm_engine, conversation("Which functions does this file define?"), slot="chat-drafts")
    follow_up = conversation(
        "Which functions does this file define?",
        "List their names again, one per line.",
        answers=[first["content"]],
    )
    warm = warm_engine.generate({"messages": follow_up, "max_tokens": 96, "slot": "chat-drafts"})
    assert warm["stats"]["n_reused"] > 0
    assert_counts(warm["stats"])
    cold_engine.clear()
    cold = cold_engine.generate({"messages": follow_up, "max_tokens": 96})
    assert warm["tokens"] == cold["tokens"], (warm["content"], cold["content"])


def test_rejected_drafts_leave_the_cells_as_the_record_says(warm_engine, cold_engine):
    # Every draft is spoiled after its second token, and drafting never pauses: the model rejects the
    # rest of each one, whose cells must go. A stale cell would make the next batch's positions clash
    # (llama.cpp refuses it) or change the answer against the cold run below.
    spoiled = {"debug_draft": {"spoil_after": 2, "adaptive": False}}
    warm = rewrite(warm_engine, slot="spoiled", **spoiled)
    assert warm["finish_reason"] in ("stop", "length"), warm
    stats = warm["stats"]
    assert stats["n_drafted"] > 2 * stats["n_accepted"] > 0, stats
    slots = {s["id"]: s for s in warm_engine.info()["slots"]}
    assert slots[stats["slot"]]["n_tokens"] == stats["n_prompt"]  # exact reuse keeps the prompt only
    cold_engine.clear()
    cold = rewrite(cold_engine, **spoiled)
    assert warm["tokens"] == cold["tokens"]
    # The follow-up reuses the slot after those rejections and still answers as a cold cache does.
    follow_up = conversation(REWRITE, "Now only its first line.", answers=[warm["content"]])
    after = ask(warm_engine, follow_up, slot="spoiled")
    assert after["stats"]["n_reused"] >= stats["n_prompt"] - 64  # all but the last chunk
    assert_same_as_cold(after, cold_engine, follow_up)


def test_without_exact_reuse_the_record_after_rejected_drafts_is_reused_whole(test_model_path):
    from .conftest import open_engine

    engine = open_engine(test_model_path, exact_reuse=False)
    try:
        spoiled = {"debug_draft": {"spoil_after": 1, "adaptive": False}, "max_tokens": 80}
        first = engine.generate(
            {"prompt": DOCUMENT + "\n# The same file again:\n" + DOCUMENT[:600], **spoiled}
        )
        assert first["stats"]["n_drafted"] > first["stats"]["n_accepted"] > 0, first["stats"]
        slot = {s["id"]: s for s in engine.info()["slots"]}[first["stats"]["slot"]]
        # Answer cells are kept without exact reuse: the prompt, then every token fed back, and no
        # rejected draft (those would come after them, out of the record).
        assert first["stats"]["n_prompt"] <= slot["n_tokens"] <= first["stats"]["n_prompt"] + 80
        again = engine.generate(
            {"prompt": DOCUMENT + "\n# The same file again:\n" + DOCUMENT[:600], **spoiled}
        )
        assert again["stats"]["n_reused"] == again["stats"]["n_prompt"] - 1
    finally:
        engine.close()


def test_drafting_off_counts_nothing_and_on_counts_consistently(warm_engine):
    off = rewrite(warm_engine, speculative=False)
    assert off["stats"]["n_drafted"] == off["stats"]["n_accepted"] == 0
    assert warm_engine.info()["speculative"] is True  # the engine's default
    on = rewrite(warm_engine)
    assert_counts(on["stats"])
    assert on["stats"]["n_drafted"] > 0
    warm = warm_engine.generate({"messages": conversation(REWRITE), "warm": True})
    assert warm["stats"]["n_drafted"] == warm["stats"]["n_accepted"] == 0


def test_a_cancel_while_drafting_answers_within_half_a_second(warm_engine, cold_engine):
    pieces: list[str] = []
    outcome: dict[str, Any] = {}
    enough = threading.Event()

    def on_piece(text: str) -> bool:
        pieces.append(text)
        if len("".join(pieces)) > 120:  # well into the copied function: drafts are being verified
            enough.set()
        return True

    def run() -> None:
        outcome["result"] = warm_engine.generate(
            {"messages": conversation(REWRITE), "max_tokens": 400, "slot": "cancel-drafts"}, on_piece
        )
        outcome["returned"] = time.perf_counter()

    worker = threading.Thread(target=run)
    worker.start()
    assert enough.wait(120)
    cancelled_at = time.perf_counter()
    warm_engine.cancel()
    worker.join(10)
    result = outcome["result"]
    assert result["finish_reason"] == "cancelled"
    assert outcome["returned"] - cancelled_at < 0.5
    assert result["stats"]["n_drafted"] > 0
    # Nothing past the prompt stays: the answer's cells, accepted or not, are dropped.
    slots = {s["id"]: s for s in warm_engine.info()["slots"]}
    assert slots[result["stats"]["slot"]]["n_tokens"] == result["stats"]["n_prompt"]
    after = rewrite(warm_engine, slot="cancel-drafts")
    assert after["stats"]["n_reused"] > 0
    cold_engine.clear()
    assert after["tokens"] == rewrite(cold_engine)["tokens"]
