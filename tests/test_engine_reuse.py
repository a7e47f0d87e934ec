"""KV prefix reuse on the real test model: a warm cache must never change a greedy answer.

Each test drives the warm engine through a sequence of requests that leaves its cache in some state,
then compares the next answer token by token with the same request on a cleared (cold) engine.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from lsp_server.assistant import prompts
from lsp_server.engine import native

from .conftest import open_engine

ROOT = Path(__file__).resolve().parent.parent
DOCUMENT = (ROOT / "examples" / "inventory.py").read_text()
# A fixed size, so that the tests' prompts fit the context however edits.py grows.
OTHER_DOCUMENT = (ROOT / "lsp_server" / "assistant" / "edits.py").read_text()[:5000]
MAX_TOKENS = 24


def conversation(
    *turns: str, document: str = DOCUMENT, answers: list[str] | None = None
) -> list[dict[str, Any]]:
    """System prompt, document, then user turns (with the given assistant answers between them)."""
    messages = [prompts.system_message(), prompts.document_message("inventory.py", document)]
    answers = answers or []
    for i, turn in enumerate(turns):
        messages.append({"role": "user", "content": turn})
        if i < len(answers):
            messages.append({"role": "assistant", "content": answers[i]})
    return messages


def ask(
    engine: native.NativeEngine, messages: list[dict[str, Any]], slot: str = "", **extra: Any
) -> dict[str, Any]:
    request = {"messages": messages, "max_tokens": MAX_TOKENS, **extra}
    if slot:
        request["slot"] = slot
    return engine.generate(request)


def cold_answer(cold: native.NativeEngine, messages: list[dict[str, Any]]) -> dict[str, Any]:
    cold.clear()
    result = ask(cold, messages)
    assert result["stats"]["n_reused"] == 0
    return result


def assert_same_as_cold(
    warm_result: dict[str, Any], cold: native.NativeEngine, messages: list[dict[str, Any]]
) -> None:
    reference = cold_answer(cold, messages)
    assert warm_result["tokens"] == reference["tokens"], (
        warm_result["content"],
        reference["content"],
    )
    assert len(warm_result["tokens"]) > 0


def prompt_tokens(engine: native.NativeEngine, messages: list[dict[str, Any]]) -> list[int]:
    return list(engine.tokenize({"messages": messages})["tokens"])


def cuts(tokens: list[int], engine: native.NativeEngine, chunk: int = 64) -> list[int]:
    """Where a prompt is cut into chunks (the rule in native/src/engine.h, restated): before every
    token that opens a message, and every `chunk` tokens after the last cut."""
    message_start = engine.info()["message_start"]
    found = [0]
    for i in range(1, len(tokens)):
        if tokens[i] == message_start or i - found[-1] == chunk:
            found.append(i)
    return found


def common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def test_appended_turn_reuses_the_prefix_and_matches_cold(warm_engine, cold_engine):
    first = conversation("What does apply_discount do?")
    answer = ask(warm_engine, first, slot="append")
    follow_up = conversation("What does apply_discount do?", "And restock?", answers=[answer["content"]])
    result = ask(warm_engine, follow_up, slot="append")
    stats = result["stats"]
    assert stats["n_common"] >= 0.8 * stats["n_prompt"]
    # Reuse stops where the answer's message starts, a cut that a cold run makes too (and not at a
    # fixed 64-token boundary before it): the cells of "<|im_start|>assistant\n" were read with the
    # previous prompt's end, not with the answer as a cold run reads them.
    assert stats["n_common"] == answer["stats"]["n_prompt"]
    assert stats["n_reused"] == stats["n_common"] - 3
    assert stats["n_evaluated"] == stats["n_prompt"] - stats["n_reused"]
    assert_same_as_cold(result, cold_engine, follow_up)


def test_history_edited_in_the_middle_matches_cold(warm_engine, cold_engine):
    ask(
        warm_engine,
        conversation("What does total_value do?", "And restock?", answers=["It sums prices."]),
        slot="mid",
    )
    edited = conversation("What does total_value return?", "And restock?", answers=["It sums prices."])
    result = ask(warm_engine, edited, slot="mid")
    assert 0 < result["stats"]["n_reused"] < result["stats"]["n_prompt"] * 0.9
    assert_same_as_cold(result, cold_engine, edited)


def test_unrelated_prompt_after_a_conversation_matches_cold(warm_engine, cold_engine):
    ask(warm_engine, conversation("Summarise this file."), slot="switch")
    unrelated = [{"role": "user", "content": "Write a haiku about compilers."}]
    result = ask(warm_engine, unrelated, slot="switch")
    assert_same_as_cold(result, cold_engine, unrelated)


def test_repeated_prompt_evaluates_at_least_one_token_and_matches_cold(warm_engine, cold_engine):
    messages = conversation("Name one risk in apply_discount.")
    first = ask(warm_engine, messages, slot="repeat")
    again = ask(warm_engine, messages, slot="repeat")
    assert again["stats"]["n_common"] == again["stats"]["n_prompt"]
    assert 1 <= again["stats"]["n_evaluated"] <= 64
    assert again["tokens"] == first["tokens"]
    assert_same_as_cold(again, cold_engine, messages)


def test_prompt_shorter_than_the_cache_matches_cold(warm_engine, cold_engine):
    ask(
        warm_engine,
        conversation("What is Item?", "What is restock?", answers=["A dataclass."]),
        slot="short",
    )
    shorter = conversation("What is Item?")
    result = ask(warm_engine, shorter, slot="short")
    assert result["stats"]["n_reused"] > 0
    assert_same_as_cold(result, cold_engine, shorter)


def test_n_common_is_the_token_level_common_prefix(warm_engine):
    before = conversation("Explain total_value.")
    after = conversation("Explain total_value.", "Now explain restock.", answers=["It multiplies."])
    ask(warm_engine, before, slot="lcp")
    result = ask(warm_engine, after, slot="lcp")
    expected = common_prefix(prompt_tokens(warm_engine, before), prompt_tokens(warm_engine, after))
    stats = result["stats"]
    assert stats["n_common"] == expected
    # Exact reuse stops at the last cut a cold run makes too.
    tokens = prompt_tokens(warm_engine, after)
    assert stats["n_reused"] == max(c for c in cuts(tokens, warm_engine) if c <= expected)


def test_without_exact_reuse_n_reused_is_the_common_prefix(test_model_path):
    engine = open_engine(test_model_path, exact_reuse=False, n_slots=1)
    try:
        before = conversation("Explain total_value.")
        after = conversation("Explain total_value.", "Now explain restock.", answers=["It multiplies."])
        ask(engine, before)
        result = ask(engine, after)
        expected = common_prefix(prompt_tokens(engine, before), prompt_tokens(engine, after))
        assert result["stats"]["n_reused"] == expected
    finally:
        engine.close()


def test_cancel_stops_within_100ms_and_the_next_answer_matches_cold(warm_engine, cold_engine):
    messages = conversation("Rewrite the whole file with docstrings everywhere.")
    started = threading.Event()
    cancel_latency: list[float] = []

    def on_piece(_text: str) -> bool:
        started.set()
        return True

    outcome: dict[str, Any] = {}

    def run() -> None:
        outcome["result"] = warm_engine.generate(
            {"messages": messages, "max_tokens": 400, "slot": "cancel"}, on_piece
        )
        outcome["returned"] = time.perf_counter()

    worker = threading.Thread(target=run)
    worker.start()
    assert started.wait(120)
    time.sleep(0.3)
    cancelled_at = time.perf_counter()
    warm_engine.cancel()
    worker.join(10)
    cancel_latency.append(outcome["returned"] - cancelled_at)
    result = outcome["result"]
    assert result["finish_reason"] == "cancelled"
    assert result["content"]  # the partial answer comes back
    assert cancel_latency[0] < 0.1
    follow_up = conversation(
        "Rewrite the whole file with docstrings everywhere.",
        "Just the first function.",
        answers=[result["content"]],
    )
    after = ask(warm_engine, follow_up, slot="cancel")
    assert after["stats"]["n_reused"] > 0  # the prompt's cells survived the cancel
    assert_same_as_cold(after, cold_engine, follow_up)


def test_cancel_during_prefill_keeps_the_cache_consistent(warm_engine, cold_engine):
    messages = conversation("List every function.", document=OTHER_DOCUMENT * 3)
    timer = threading.Timer(0.3, warm_engine.cancel)
    timer.start()
    started = time.perf_counter()
    result = ask(warm_engine, messages, slot="prefill-cancel")
    timer.join()
    assert result["finish_reason"] == "cancelled"
    assert result["stats"]["n_generated"] == 0
    assert time.perf_counter() - started < 5
    # The chunks read before the cancel are kept (a chunk cut short is not).
    kept = next(s for s in warm_engine.info()["slots"] if s["key"] == "prefill-cancel")["n_tokens"]
    assert kept == result["stats"]["n_reused"] + result["stats"]["n_evaluated"]
    again = ask(warm_engine, messages, slot="prefill-cancel")
    assert again["finish_reason"] in ("stop", "length")
    assert again["stats"]["n_reused"] >= kept
    assert_same_as_cold(again, cold_engine, messages)


def test_forced_decode_failure_invalidates_the_slot_and_the_next_answer_matches_cold(
    warm_engine, cold_engine
):
    messages = conversation("What could go wrong in restock?")
    with pytest.raises(native.DecodeError):
        ask(warm_engine, messages, slot="fault", debug_fail_prefill_after_chunks=0)
    slot = next(s for s in warm_engine.info()["slots"] if s["key"] == "fault")
    assert slot["n_tokens"] == 0  # the guard cleared what it could not vouch for
    result = ask(warm_engine, messages, slot="fault")
    assert_same_as_cold(result, cold_engine, messages)


def test_fork_and_eviction_keep_answers_equal_to_cold(test_model_path, cold_engine):
    engine = open_engine(test_model_path, n_slots=2)
    try:
        chat = conversation("What does total_value do?")
        chat_result = ask(engine, chat, slot="chat-a")
        # A new conversation about the same document forks the shared prefix instead of evaluating it.
        action = conversation("Write a docstring for restock.")
        forked = ask(engine, action, slot="action-a")
        assert forked["stats"]["n_reused"] >= 0.6 * forked["stats"]["n_prompt"]
        assert forked["stats"]["slot"] != chat_result["stats"]["slot"]
        assert_same_as_cold(forked, cold_engine, action)
        # A third conversation on another document evicts the least recently used slot.
        other = conversation("What does apply_replacement do?", document=OTHER_DOCUMENT)
        ask(engine, other, slot="chat-b")
        keys = {s["key"] for s in engine.info()["slots"]}
        assert "chat-b" in keys and "chat-a" not in keys
        again = conversation("What does total_value do?", "And apply_discount?", answers=["It sums."])
        result = ask(engine, again, slot="chat-a")
        assert result["stats"]["n_reused"] > 0  # forked back from action-a's copy of the document
        assert_same_as_cold(result, cold_engine, again)
    finally:
        engine.close()


def test_restore_from_disk_is_warm_and_matches_cold(test_model_path, cold_engine, tmp_path):
    messages = conversation("What does restock check?")
    first = open_engine(test_model_path)
    ask(first, messages, slot="persist")
    assert first.save_slots(tmp_path)["saved"] == 1
    first.close()

    second = open_engine(test_model_path)
    try:
        assert second.restore_slots(tmp_path)["known"] == 1
        follow_up = conversation(
            "What does restock check?", "And what does it return?", answers=["The amount."]
        )
        result = ask(second, follow_up, slot="persist")
        assert result["stats"]["n_reused"] >= 0.7 * result["stats"]["n_prompt"]
        assert_same_as_cold(result, cold_engine, follow_up)
    finally:
        second.close()


def test_a_slot_copied_by_a_warm_request_and_saved_at_once_restores_cells_that_match_cold(
    test_model_path, cold_engine, tmp_path
):
    # The server's order when a question comes right after a document opens: the question reads the
    # document in its own slot, then warming asks for the document's slot, which another slot now holds
    # whole, and the editor closes. llama.cpp copies a stream's cells at the next decode: a copy with no
    # decode after it used to be saved as the stream's old cells under the document's tokens.
    first = open_engine(test_model_path)
    ask(first, conversation("What does restock check?"), slot="question", max_tokens=4)
    warmed = warm(first, conversation(), slot="document:inventory")
    assert warmed["stats"]["n_evaluated"] > 0  # it read its last chunk, so the copy was made
    assert first.save_slots(tmp_path)["saved"] == 2
    first.close()

    second = open_engine(test_model_path)
    try:
        second.restore_slots(tmp_path)
        question = conversation("Which function changes the stock?")
        # Named for the saved document slot, so it is the one loaded.
        result = ask(second, question, slot="document:inventory")
        assert result["stats"]["n_reused"] == warmed["stats"]["n_prompt"]
        assert_same_as_cold(result, cold_engine, question)
    finally:
        second.close()


def test_state_saved_for_another_model_is_never_loaded(test_model_path, tmp_path):
    first = open_engine(test_model_path, cache_key="model-one")
    ask(first, conversation("Hi"), slot="x")
    first.save_slots(tmp_path)
    first.close()
    second = open_engine(test_model_path, cache_key="model-two")
    try:
        restored = second.restore_slots(tmp_path)
        assert restored["known"] == 0
        assert "another model" in restored["discarded"]
        assert not (tmp_path / "index.json").exists()
    finally:
        second.close()


def test_corrupt_state_file_is_ignored_and_deleted(test_model_path, cold_engine, tmp_path):
    messages = conversation("What is Item?")
    first = open_engine(test_model_path)
    ask(first, messages, slot="corrupt")
    first.save_slots(tmp_path)
    first.close()
    state_file = next(tmp_path.glob("slot-*.bin"))
    state_file.write_bytes(state_file.read_bytes()[:1000])
    second = open_engine(test_model_path)
    try:
        assert second.restore_slots(tmp_path)["known"] == 1
        result = ask(second, messages, slot="corrupt")
        assert result["stats"]["n_reused"] == 0
        assert not state_file.exists()
        assert_same_as_cold(result, cold_engine, messages)
    finally:
        second.close()


# ---- warming: requests that only read messages into the cache -------------------------------------------


def warm(
    engine: native.NativeEngine, messages: list[dict[str, Any]], slot: str, **extra: Any
) -> dict[str, Any]:
    return engine.generate({"messages": messages, "slot": slot, "warm": True, "background": True, **extra})


def test_a_warmed_document_leaves_only_the_question_to_evaluate(warm_engine, cold_engine):
    warm_engine.clear()  # the earlier tests' conversations hold every slot, and warming evicts none
    opening = conversation()  # the system prompt and the document: what every question starts with
    warmed = warm(warm_engine, opening, slot="document:inventory")
    assert warmed["finish_reason"] == "stop" and warmed["tokens"] == []
    assert warmed["stats"]["n_reused"] + warmed["stats"]["n_evaluated"] == warmed["stats"]["n_prompt"]
    question = conversation("Which function changes the stock?")
    result = ask(warm_engine, question, slot="new-question")
    n_prompt = result["stats"]["n_prompt"]
    # The question's own message is all that is evaluated, forked from the warmed slot.
    assert result["stats"]["n_reused"] == warmed["stats"]["n_prompt"]
    assert result["stats"]["n_evaluated"] == n_prompt - warmed["stats"]["n_prompt"] < 40
    assert_same_as_cold(result, cold_engine, question)


def test_a_warmed_answer_leaves_only_the_follow_up_to_evaluate(warm_engine, cold_engine):
    first = conversation("What does apply_discount do?")
    answer = ask(warm_engine, first, slot="follow")
    with_answer = [*first, {"role": "assistant", "content": answer["content"]}]
    warmed = warm(warm_engine, with_answer, slot="follow")
    assert warmed["stats"]["n_reused"] == answer["stats"]["n_prompt"] - 3  # up to "<|im_start|>assistant"
    follow_up = [*with_answer, {"role": "user", "content": "Is the percent checked?"}]
    result = ask(warm_engine, follow_up, slot="follow")
    assert result["stats"]["n_reused"] == warmed["stats"]["n_prompt"]
    assert result["stats"]["n_evaluated"] < 30
    assert_same_as_cold(result, cold_engine, follow_up)


def test_warming_what_a_slot_already_holds_keeps_the_question_read_after_it(warm_engine, cold_engine):
    """A server restarted on its saved slots warms each open document again; the document's slot
    still holds the question asked after it, and warming must not drop that question, so asking it
    again evaluates only the answer's header (bench (R))."""
    warm_engine.clear()
    question = conversation("Which function changes the stock?")
    asked = ask(warm_engine, question, slot="document:inventory")
    warmed = warm(warm_engine, conversation(), slot="document:inventory")
    assert warmed["stats"]["n_evaluated"] == 0
    assert warmed["stats"]["n_reused"] == warmed["stats"]["n_prompt"] < asked["stats"]["n_prompt"]
    held = next(s for s in warm_engine.info()["slots"] if s["key"] == "document:inventory")["n_tokens"]
    assert held == asked["stats"]["n_prompt"]
    again = ask(warm_engine, question, slot="document:inventory")
    assert again["stats"]["n_evaluated"] == 3  # "<|im_start|>assistant\n": the answer needs its logits
    assert_same_as_cold(again, cold_engine, question)


def test_warming_stopped_halfway_keeps_its_chunks_and_answers_match_cold(warm_engine, cold_engine):
    warm_engine.clear()
    opening = conversation(document=OTHER_DOCUMENT)
    stopped = warm(warm_engine, opening, slot="halfway", debug_cancel_prefill_after_chunks=3)
    assert stopped["finish_reason"] == "cancelled"
    kept = next(s for s in warm_engine.info()["slots"] if s["key"] == "halfway")["n_tokens"]
    assert stopped["stats"]["n_evaluated"] > 0
    assert kept == stopped["stats"]["n_reused"] + stopped["stats"]["n_evaluated"]
    resumed = warm(warm_engine, opening, slot="halfway")
    assert resumed["stats"]["n_reused"] == kept
    assert resumed["stats"]["n_reused"] + resumed["stats"]["n_evaluated"] == resumed["stats"]["n_prompt"]
    question = conversation("What does this module do?", document=OTHER_DOCUMENT)
    result = ask(warm_engine, question, slot="halfway")
    assert_same_as_cold(result, cold_engine, question)


def test_background_requests_never_evict_a_conversation(test_model_path):
    engine = open_engine(test_model_path, n_slots=2)
    try:
        ask(engine, conversation("Hi"), slot="chat-1")
        warm(engine, conversation(), slot="document:a")  # takes the free slot
        warm(engine, conversation(document=OTHER_DOCUMENT), slot="document:b")  # evicts only warming
        keys = {s["key"] for s in engine.info()["slots"]}
        assert keys == {"chat-1", "document:b"}
        ask(engine, conversation("Hi"), slot="chat-1")
        ask(engine, conversation("Hello"), slot="chat-2")  # a conversation may evict warming (the LRU)
        assert {s["key"] for s in engine.info()["slots"]} == {"chat-1", "chat-2"}
        with pytest.raises(native.NativeError) as raised:
            warm(engine, conversation(), slot="document:a")
        assert raised.value.kind == "no_slot"
        # Warming a conversation's own slot (its answer, for the follow-up) keeps it the conversation's.
        warm(engine, conversation("Hello"), slot="chat-2")
        with pytest.raises(native.NativeError):
            warm(engine, conversation(), slot="document:a")
    finally:
        engine.close()
