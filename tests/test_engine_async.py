"""The Python engine layer: one worker thread, a queue, async results, streaming, cancel, persistence."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from lsp_server.engine import ChatRequest, Engine, EngineClosed, EngineConfig, EngineError, InfillRequest
from lsp_server.engine.local import Job


def config(model: Path, **overrides: object) -> EngineConfig:
    values: dict[str, object] = {"model_path": model, "n_ctx": 1024, "n_slots": 2, **overrides}
    return EngineConfig(**values)  # type: ignore[arg-type]


async def test_pieces_arrive_on_the_event_loop_in_order(tiny_model):
    engine = Engine(config(tiny_model))
    try:
        await engine.ready()
        loop_thread_pieces: list[str] = []
        result = await engine.generate(
            ChatRequest(prompt="def main():", max_tokens=16), loop_thread_pieces.append
        )
        await asyncio.sleep(0)  # pieces are scheduled with call_soon_threadsafe before the result
        assert "".join(loop_thread_pieces) == result.content
        assert result.stats.n_generated == 16
    finally:
        engine.close()


async def test_keep_going_ends_an_answer_where_it_says_and_keeps_its_text(tiny_model):
    engine = Engine(config(tiny_model))
    try:
        await engine.ready()
        seen: list[str] = []

        def keep_going(text: str) -> bool:
            seen.append(text)
            return len(text) < 12

        pieces: list[str] = []
        result = await engine.generate(
            ChatRequest(prompt="def main():", max_tokens=200), pieces.append, keep_going
        )
        await asyncio.sleep(0)
        assert result.finish_reason == "stop"  # ended where keep_going said, not cancelled
        assert result.content == seen[-1] == "".join(pieces) and len(result.content) >= 12
        assert len(seen) == result.stats.n_generated < 200
    finally:
        engine.close()


async def test_requests_run_one_at_a_time_in_order(tiny_model):
    engine = Engine(config(tiny_model))
    try:
        await engine.ready()
        jobs = [engine.submit(ChatRequest(prompt=f"request {i}", max_tokens=4)) for i in range(4)]
        results = [await job.wait() for job in jobs]
        assert [r.stats.n_generated for r in results] == [4, 4, 4, 4]
    finally:
        engine.close()


async def test_a_queued_request_cancelled_before_it_starts_never_runs(tiny_model):
    engine = Engine(config(tiny_model))
    try:
        await engine.ready()
        running = engine.submit(ChatRequest(prompt="long " * 10, max_tokens=600))
        queued = engine.submit(ChatRequest(prompt="never", max_tokens=4))
        queued.cancel()
        running.cancel()
        first, second = await running.wait(), await queued.wait()
        assert first.finish_reason == "cancelled"  # cancelled before its first token could be the last
        assert second.finish_reason == "cancelled"
        assert second.stats.n_prompt == 0  # it never reached the model
    finally:
        engine.close()


async def test_cancelling_the_awaiting_task_cancels_the_native_run(tiny_model):
    engine = Engine(config(tiny_model, n_ctx=8192))
    try:
        await engine.ready()
        task = asyncio.create_task(engine.generate(ChatRequest(prompt="x", max_tokens=8000)))
        await asyncio.sleep(0.2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # the worker is free again at once
        result = await asyncio.wait_for(engine.generate(ChatRequest(prompt="y", max_tokens=2)), 5)
        assert result.stats.n_generated == 2
    finally:
        engine.close()


async def test_close_saves_slots_and_the_next_engine_restores_them(tiny_model, tmp_path):
    first = Engine(config(tiny_model, state_dir=tmp_path))
    await first.ready()
    await first.generate(ChatRequest(prompt="def persisted(): pass " * 12, max_tokens=2, slot="p"))
    first.close()
    assert (tmp_path / "index.json").exists()

    second = Engine(config(tiny_model, state_dir=tmp_path))
    try:
        info = await second.ready()
        assert info["restore"] == {"known": 1}
        result = await second.generate(
            ChatRequest(prompt="def persisted(): pass " * 12 + "x", max_tokens=2, slot="p")
        )
        assert result.stats.n_reused > 0
    finally:
        second.close()


async def test_a_missing_model_fails_ready_and_requests_with_a_clear_error(tmp_path):
    engine = Engine(config(tmp_path / "missing.gguf"))
    with pytest.raises(EngineError, match="not found") as failed:  # the engine's own error type
        await engine.ready()
    assert failed.value.kind == "model_not_found"
    engine.close()
    with pytest.raises(EngineClosed):
        engine.submit(ChatRequest(prompt="x"))


async def test_info_and_tokenize_go_through_the_queue(tiny_model):
    engine = Engine(config(tiny_model))
    try:
        await engine.ready()
        assert len((await engine.info())["slots"]) == 2
        tokens = await engine.tokenize({"text": "héllo"})
        assert len(tokens) == 6  # one token per byte in the tiny model
    finally:
        engine.close()


LONG_PROMPT = " ".join(f"word{i}" for i in range(900))  # ~6,000 tokens of the tiny model: many chunks


async def started(job: Job) -> None:
    while not job.future.running():
        await asyncio.sleep(0.001)


async def test_a_request_preempts_warming_and_warming_resumes_after_it(tiny_model):
    engine = Engine(config(tiny_model, n_ctx=8192))
    try:
        await engine.ready()
        warming = engine.warm(ChatRequest(prompt=LONG_PROMPT, slot="document:a"))
        await started(warming)
        finished: list[str] = []
        warming.future.add_done_callback(lambda _f: finished.append("warming"))
        request = await engine.generate(ChatRequest(prompt="def main():", max_tokens=4, slot="chat"))
        finished.append("request")
        warmed = await warming.wait()
        assert finished == ["request", "warming"]  # the request did not wait for the warming
        assert warming.preemptions == 1
        assert request.stats.n_generated == 4
        # Warming finished after the request, from the chunks it had read before (if any).
        assert warmed.finish_reason == "stop"
        assert warmed.stats.n_reused + warmed.stats.n_evaluated == warmed.stats.n_prompt
        slots = {s["key"]: s["n_tokens"] for s in (await engine.info())["slots"]}
        assert slots["document:a"] == warmed.stats.n_prompt
    finally:
        engine.close()


async def test_warming_reads_the_likeliest_next_prompt_first(tiny_fim_model):
    # A follow-up's warming (a conversation with its answer) before a document's opening, and that
    # before the completion slot: queued the other way round while a request runs.
    engine = Engine(config(tiny_fim_model, n_ctx=8192))
    try:
        await engine.ready()
        request = engine.submit(ChatRequest(prompt=LONG_PROMPT, max_tokens=4, slot="chat"))
        await started(request)
        finished: list[str] = []
        infill = InfillRequest(prefix="def f(x):\n", prompt="    return", suffix="\n", filename="a.py")
        warmings = {
            "completion": engine.warm_completion(infill),
            "document": engine.warm(ChatRequest(prompt="a document " * 20, slot="document:a")),
            "follow-up": engine.warm(ChatRequest(prompt="a conversation " * 20, slot="chat"), follow_up=True),
        }
        for name, job in warmings.items():
            job.future.add_done_callback(lambda _f, name=name: finished.append(name))
        assert (await request.wait()).finish_reason == "length"
        for job in warmings.values():
            assert (await job.wait()).finish_reason == "stop"
        assert finished == ["follow-up", "document", "completion"]
    finally:
        engine.close()


async def test_a_follow_ups_warming_preempts_a_documents_which_keeps_its_chunks(tiny_model):
    engine = Engine(config(tiny_model, n_ctx=8192))
    try:
        await engine.ready()
        document = engine.warm(ChatRequest(prompt=LONG_PROMPT, slot="document:a"))
        await started(document)
        follow_up = engine.warm(ChatRequest(prompt="a conversation " * 20, slot="chat"), follow_up=True)
        finished: list[str] = []
        document.future.add_done_callback(lambda _f: finished.append("document"))
        assert (await follow_up.wait()).finish_reason == "stop"
        finished.append("follow-up")
        warmed = await document.wait()
        assert finished == ["follow-up", "document"] and document.preemptions == 1
        assert warmed.finish_reason == "stop" and warmed.stats.n_reused > 0  # its chunks read before
        assert warmed.stats.n_reused + warmed.stats.n_evaluated == warmed.stats.n_prompt
    finally:
        engine.close()


async def test_a_request_lets_the_warming_of_its_own_conversation_finish_its_chunk(tiny_model):
    # One chunk is 2,048 tokens: a request that aborted it would find nothing read (0 reused).
    engine = Engine(config(tiny_model, n_ctx=8192, prefill_chunk=2048))
    try:
        await engine.ready()
        warming = engine.warm(ChatRequest(prompt=LONG_PROMPT, slot="conversation"))
        await started(warming)
        request = await engine.generate(
            ChatRequest(prompt=LONG_PROMPT + " next", max_tokens=2, slot="conversation")
        )
        assert request.stats.n_reused >= 2048  # the chunk being read when it came was finished
        assert request.stats.n_reused + request.stats.n_evaluated == request.stats.n_prompt
        assert (await warming.wait()).finish_reason == "stop" and warming.preemptions == 1
    finally:
        engine.close()


async def test_cancelled_warming_answers_cancelled_and_background_work_is_not_queue_length(tiny_model):
    engine = Engine(config(tiny_model, n_ctx=8192))
    try:
        await engine.ready()
        warming = engine.warm(ChatRequest(prompt="word " * 1000, slot="document:a"))
        assert engine.queue_length == 0  # the status's queue counts requests only
        warming.cancel()
        assert (await warming.wait()).finish_reason == "cancelled"
    finally:
        engine.close()


async def test_a_status_request_lets_warming_finish_its_chunk_and_loses_nothing(tiny_model):
    engine = Engine(config(tiny_model, n_ctx=8192))
    try:
        await engine.ready()
        warming = engine.warm(ChatRequest(prompt=LONG_PROMPT, slot="document:a"))
        await started(warming)
        await engine.info()  # waits for the chunk being read, then runs before the rest of the warming
        warmed = await warming.wait()
        assert warming.preemptions == 1
        assert warmed.stats.n_reused > 0  # the resumed warming started after the chunks already read
        assert warmed.stats.n_reused + warmed.stats.n_evaluated == warmed.stats.n_prompt
    finally:
        engine.close()
