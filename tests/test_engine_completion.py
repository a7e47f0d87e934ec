"""Inline completion in the engine, on the tiny model with FIM tokens: the completion slot, its
longest-common-prefix reuse, and chat going first."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

from lsp_server.engine import ChatRequest, Engine, EngineConfig, InfillRequest


def config(model: Path, **overrides: object) -> EngineConfig:
    values: dict[str, object] = {"model_path": model, "n_ctx": 2048, "n_slots": 2, **overrides}
    return EngineConfig(**values)  # type: ignore[arg-type]


PREFIX = "".join(f"def f{n}(x):\n    return x + {n}\n\n" for n in range(30))


def infill(prompt: str, max_tokens: int = 4) -> InfillRequest:
    return InfillRequest(prefix=PREFIX, prompt=prompt, suffix="\n", filename="a.py", max_tokens=max_tokens)


async def test_consecutive_keystrokes_read_only_what_changed(tiny_fim_model):
    engine = Engine(config(tiny_fim_model))
    try:
        await engine.ready()
        assert engine.can_complete
        first = await engine.complete(infill("def g(x):"))
        assert first.stats.n_evaluated == first.stats.n_prompt  # cold
        second = await engine.complete(infill("def g(x): "))
        # The lines above and most of the line being typed stay; its changed end, the suffix and the
        # middle token are read again.
        assert second.stats.n_reused >= first.stats.n_prompt - 8
        assert second.stats.n_evaluated <= 8
        info = await engine.info()
        completion_slots = [s for s in info["slots"] if s["completion"]]
        assert len(completion_slots) == 1 and len(info["slots"]) == 3
    finally:
        engine.close()


async def test_chats_never_take_the_completion_slot_and_completions_no_chat_slot(tiny_fim_model):
    engine = Engine(config(tiny_fim_model))
    try:
        await engine.ready()
        await engine.complete(infill("def g(x):"))
        for n in range(4):  # more conversations than slots
            await engine.generate(ChatRequest(prompt=f"chat {n} " * 20, max_tokens=2, slot=f"c{n}"))
        again = await engine.complete(infill("def g(x):"))
        assert again.stats.n_reused == again.stats.n_prompt - 1  # all of it but the token answered from
        info = await engine.info()
        assert {s["key"] for s in info["slots"] if not s["completion"]} == {"c2", "c3"}
    finally:
        engine.close()


async def test_a_chat_request_stops_a_running_completion_at_once(tiny_fim_model):
    engine = Engine(config(tiny_fim_model))
    try:
        await engine.ready()
        writing = threading.Event()

        def at_a_slow_model_pace(_text: str) -> bool:
            # The tiny model could write all 1,500 tokens before the chat request arrives on a fast
            # or busy machine; 5 ms a piece keeps it writing for seconds.
            writing.set()
            time.sleep(0.005)
            return True

        completion = asyncio.ensure_future(
            engine.complete(infill("def g(x):", max_tokens=1500), at_a_slow_model_pace)
        )
        while not writing.is_set():
            await asyncio.sleep(0.01)
        started = time.monotonic()
        answer = await engine.generate(ChatRequest(prompt="a question", max_tokens=2))
        waited = time.monotonic() - started
        stopped = await completion
        assert stopped.finish_reason == "cancelled"
        assert 0 < stopped.stats.n_generated < 1500
        assert answer.stats.n_generated == 2
        assert waited < 2.0  # one decode step of the tiny model, not the rest of 1,500 tokens
    finally:
        engine.close()


async def test_keep_going_ends_a_completion_where_it_says_and_keeps_the_text(tiny_fim_model):
    engine = Engine(config(tiny_fim_model))
    try:
        await engine.ready()
        seen: list[str] = []

        def keep_going(text: str) -> bool:
            seen.append(text)
            return len(text) < 5

        result = await engine.complete(infill("def g(x):", max_tokens=200), keep_going)
        assert result.finish_reason == "stop"
        assert result.content == seen[-1] and len(result.content) >= 5
        assert result.stats.n_generated < 200
    finally:
        engine.close()


async def test_a_model_without_fim_tokens_cannot_complete(tiny_model):
    engine = Engine(config(tiny_model))
    try:
        await engine.ready()
        assert not engine.can_complete
    finally:
        engine.close()
