"""Fast checks of the native engine on a tiny random-weight model: many sequences, exact invariants."""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lsp_server.engine import native

from .conftest import open_engine

CHUNK = 16  # small chunks put many boundaries inside short prompts


def open_tiny(path: Path, **options: Any) -> native.NativeEngine:
    return open_engine(path, **{"n_ctx": 1024, "prefill_chunk": CHUNK, **options})


@pytest.fixture
def engine(tiny_model: Path) -> Iterator[native.NativeEngine]:
    e = open_tiny(tiny_model)
    yield e
    e.close()


@pytest.fixture(scope="module")
def cold(tiny_model: Path) -> Iterator[native.NativeEngine]:
    e = open_tiny(tiny_model)
    yield e
    e.close()


def run(e: native.NativeEngine, prompt: str, slot: str = "", max_tokens: int = 12) -> dict[str, Any]:
    request: dict[str, Any] = {"prompt": prompt, "max_tokens": max_tokens}
    if slot:
        request["slot"] = slot
    return e.generate(request)


def cold_tokens(cold: native.NativeEngine, prompt: str, max_tokens: int = 12) -> list[int]:
    cold.clear()
    return list(run(cold, prompt, max_tokens=max_tokens)["tokens"])


def tokens_of(e: native.NativeEngine, text: str) -> list[int]:
    return list(e.tokenize({"text": text, "add_special": True, "parse_special": True})["tokens"])


def common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def mutate(rng: random.Random, text: str) -> str:
    """One of the edits a conversation goes through, chosen at random."""
    words = ["def", "return", "value", "print", "items", "total", "for", "in", "range", "if", "class"]
    kind = rng.choice(["append", "append", "edit_middle", "truncate", "unrelated", "repeat"])
    if kind == "append":
        return text + " " + " ".join(rng.choice(words) for _ in range(rng.randint(1, 40)))
    if kind == "edit_middle" and len(text) > 10:
        at = rng.randrange(len(text) // 2)
        return text[:at] + rng.choice(words) + text[at + 3 :]
    if kind == "truncate" and len(text) > 10:
        return text[: rng.randrange(5, len(text))]
    if kind == "unrelated":
        return " ".join(rng.choice(words) for _ in range(rng.randint(5, 60)))
    return text


@pytest.mark.parametrize("seed", range(4))
def test_random_conversation_edits_give_cold_tokens_and_exact_counts(engine, cold, seed):
    rng = random.Random(seed)
    text = "class Inventory: def total(self): return sum(items)"
    cached: list[int] = []
    for _ in range(12):
        text = mutate(rng, text)
        prompt = tokens_of(engine, text)
        result = run(engine, text, slot="conversation")
        stats = result["stats"]
        expected_common = common_prefix(cached, prompt)
        assert stats["n_common"] == expected_common
        keep = min(expected_common, len(prompt) - 1)
        assert stats["n_reused"] == keep - keep % CHUNK
        assert stats["n_evaluated"] == len(prompt) - stats["n_reused"] >= 1
        assert result["tokens"] == cold_tokens(cold, text)
        cached = prompt  # exact reuse keeps the prompt's cells, not the answer's


def test_without_exact_reuse_the_answer_is_kept_and_reused(tiny_model):
    e = open_tiny(tiny_model, exact_reuse=False)
    try:
        first = run(e, "def total(items): return", slot="a")
        follow = "def total(items): return" + first["content"] + " # and more"
        result = run(e, follow, slot="a")
        # the answer's own cells are reused (all but the last sampled token, which was never fed back)
        expected = common_prefix(
            tokens_of(e, "def total(items): return") + first["tokens"][:-1], tokens_of(e, follow)
        )
        assert result["stats"]["n_reused"] == expected
    finally:
        e.close()


def test_unnamed_request_goes_to_the_slot_with_the_longest_prefix(engine):
    a = run(engine, "alpha " * 30)
    b = run(engine, "beta " * 30)
    assert a["stats"]["slot"] != b["stats"]["slot"]
    again = run(engine, "alpha " * 30 + "gamma")
    assert again["stats"]["slot"] == a["stats"]["slot"]
    assert again["stats"]["n_reused"] > 0


def test_new_conversation_forks_the_prefix_another_slot_holds(engine, cold):
    document = "def helper(x): return x * 2\n" * 8
    chat = run(engine, document + "Q: explain", slot="chat")
    action = run(engine, document + "Q: document it", slot="action")
    assert action["stats"]["slot"] != chat["stats"]["slot"]
    assert action["stats"]["n_reused"] >= len(tokens_of(engine, document)) - CHUNK
    assert action["tokens"] == cold_tokens(cold, document + "Q: document it")


def test_least_recently_used_slot_is_evicted(tiny_model):
    e = open_tiny(tiny_model, n_slots=2)
    try:
        run(e, "first conversation", slot="one")
        run(e, "second conversation", slot="two")
        run(e, "first conversation, again", slot="one")  # "two" is now the least recently used
        run(e, "third conversation", slot="three")
        keys = {s["key"] for s in e.info()["slots"]}
        assert keys == {"one", "three"}
    finally:
        e.close()


def test_state_round_trips_through_disk_with_identical_answers(tiny_model, cold, tmp_path):
    prompt = "def save(state): return write(state) " * 4
    first = open_tiny(tiny_model)
    run(first, prompt, slot="s")
    first.save_slots(tmp_path)
    first.close()
    second = open_tiny(tiny_model)
    try:
        assert second.restore_slots(tmp_path) == {"known": 1}
        result = run(second, prompt + " more", slot="s")
        assert result["stats"]["n_reused"] > 0
        assert result["tokens"] == cold_tokens(cold, prompt + " more")
        # saving again keeps the loaded slot and nothing stale
        second.save_slots(tmp_path)
        assert sorted(p.name for p in tmp_path.iterdir()) == [
            "index.json",
            f"slot-{result['stats']['slot']}.bin",
        ]
    finally:
        second.close()


def test_state_saved_with_other_attention_is_discarded_not_loaded(tiny_model, tmp_path):
    # Flash attention lays the V cache out differently: such a state is another engine's.
    with_flash = open_tiny(tiny_model, flash_attn="on")
    run(with_flash, "def save(state): return write(state)", slot="s")
    with_flash.save_slots(tmp_path)
    with_flash.close()
    e = open_tiny(tiny_model)
    try:
        assert e.info()["flash_attn"] == "off"  # the default on a CPU
        restored = e.restore_slots(tmp_path)
        assert restored["known"] == 0 and "another model or build" in restored["discarded"], restored
    finally:
        e.close()


def test_an_unknown_attention_setting_is_an_error_that_names_the_choices(tiny_model):
    with pytest.raises(native.NativeError, match='"on", "off" or "auto"'):
        open_tiny(tiny_model, flash_attn="fast")


def test_corrupt_index_is_discarded(tiny_model, tmp_path):
    (tmp_path / "index.json").write_text("{not json")
    e = open_tiny(tiny_model)
    try:
        assert e.restore_slots(tmp_path)["known"] == 0
        assert not tmp_path.exists()
        assert run(e, "still serving")["tokens"]
    finally:
        e.close()


def test_prompt_longer_than_a_slot_is_an_error_and_the_engine_keeps_serving(tiny_model):
    e = open_tiny(tiny_model, n_ctx=256)
    try:
        n_ctx_slot = e.info()["n_ctx_slot"]
        with pytest.raises(native.ContextOverflow, match=f"context holds {n_ctx_slot}"):
            run(e, "word " * 400)
        result = run(e, "short", max_tokens=1000)
        assert result["finish_reason"] == "length"  # capped by the context, not an error
        assert result["stats"]["n_prompt"] + result["stats"]["n_generated"] <= n_ctx_slot
    finally:
        e.close()


def test_a_second_thread_gets_busy_instead_of_corrupting_state(engine):
    started = threading.Event()
    outcome: dict[str, Any] = {}

    def slow() -> None:
        outcome["result"] = engine.generate(
            {"prompt": "x " * 20, "max_tokens": 400}, lambda _p: started.set()
        )

    worker = threading.Thread(target=slow)
    worker.start()
    assert started.wait(30)
    with pytest.raises(native.EngineBusy):
        engine.info()
    engine.cancel()
    worker.join(30)
    assert outcome["result"]["finish_reason"] in ("cancelled", "length")


def test_stop_strings_end_the_answer_and_never_stream(engine):
    free = run(engine, "def f(): return", max_tokens=20)["content"]
    stop = free[5:8]
    pieces: list[str] = []
    result = engine.generate({"prompt": "def f(): return", "max_tokens": 20, "stop": [stop]}, pieces.append)
    assert result["content"] == free[: free.index(stop)]
    assert "".join(pieces) == result["content"]


def test_piece_callback_returning_false_cancels(engine):
    result = engine.generate({"prompt": "abc", "max_tokens": 50}, lambda _piece: False)
    assert result["finish_reason"] == "cancelled"
    assert result["stats"]["n_generated"] == 1


def test_a_cancel_just_before_a_generate_call_stops_that_call_and_is_then_forgotten(engine):
    # The worker marks a job as running before its generate call starts: a cancel in between is meant
    # for that call, not lost (and not left over for the next one).
    engine.cancel()
    stopped = run(engine, "x " * 50, max_tokens=40)
    assert stopped["finish_reason"] == "cancelled"
    assert run(engine, "x " * 50, max_tokens=40)["finish_reason"] == "length"


def test_a_cancel_right_after_the_last_prompt_chunk_keeps_the_prompt_and_the_next_call_reuses_it(
    engine, cold
):
    prompt = "x " * 50
    n_prompt = len(tokens_of(engine, prompt))
    n_chunks = -(-n_prompt // CHUNK)
    request = {"prompt": prompt, "max_tokens": 12, "slot": "c", "debug_cancel_prefill_after_chunks": n_chunks}
    stopped = engine.generate(request)
    assert stopped["finish_reason"] == "cancelled"
    assert stopped["stats"]["n_evaluated"] == n_prompt and stopped["tokens"] == []
    slot = next(s for s in engine.info()["slots"] if s["key"] == "c")
    assert slot["n_tokens"] == n_prompt  # the record says what the cells hold: the whole prompt
    again = run(engine, prompt, slot="c")  # used to fail: the cells held more than the record said
    assert again["stats"]["n_reused"] == (n_prompt - 1) // CHUNK * CHUNK
    assert again["tokens"] == cold_tokens(cold, prompt)


def test_a_cleared_cancel_does_not_stop_the_next_call(engine):
    engine.cancel()
    engine.clear_cancel()
    assert run(engine, "x " * 50, max_tokens=40)["finish_reason"] == "length"
