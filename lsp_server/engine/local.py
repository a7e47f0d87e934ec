"""The resident engine: one model, one worker thread, a queue of requests, async methods for the server.

The native engine is driven by exactly one thread (the worker); asyncio code submits jobs and awaits
them. Streamed pieces hop from the worker to the caller's event loop. Slot state is restored lazily at
start, saved after requests now and then, and saved again on close.

Queues, in order (Priority): requests (chat, and the engine's info, unless a request or a completion
runs or waits: then info is the one read before that job began), completions (inline, while typing),
then background jobs (warming the cache), the likeliest next prompt first. A job runs only when no
earlier queue has one waiting.
- A job that arrives while a later queue's background job runs preempts it (the native engine keeps
  the chunks it read), and the background job resumes after. A chat request or a completion
  aborts the chunk being read, so that the user waits for nothing, unless the chunk is of the chat's
  own conversation (the start of its prompt: work it would do anyway); other requests (info,
  tokenize) let it finish, so that no work is lost to a status bar polling.
- A chat request that arrives while a completion runs stops it at the next token: typing never holds
  up an answer by more than one decode step. The completion is not resumed (the user moved on).
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, replace
from enum import IntEnum
from pathlib import Path
from typing import Any

from . import native
from .api import ChatRequest, ChatResult, EngineClosed, EngineError, InfillRequest
from .native import NativeError

log = logging.getLogger("llama_lsp.engine")


@dataclass
class EngineConfig:
    model_path: Path
    n_ctx: int = 8192
    n_threads: int = 0  # 0: the library picks a default that holds up on a busy machine
    n_threads_batch: int = 0
    n_slots: int = 4
    prefill_chunk: int = 64
    exact_reuse: bool = True
    speculative: bool = True  # requests draft from their own tokens unless they say otherwise
    completion_slot: bool = True  # one more slot, for inline completion only
    state_dir: Path | None = None  # where slot state persists; None disables persistence
    save_interval_s: float = 120.0

    def native_options(self) -> dict[str, Any]:
        return {
            "n_ctx": self.n_ctx,
            "n_threads": self.n_threads,
            "n_threads_batch": self.n_threads_batch,
            "n_slots": self.n_slots,
            "prefill_chunk": self.prefill_chunk,
            "exact_reuse": self.exact_reuse,
            "speculative": self.speculative,
            "completion_slot": self.completion_slot,
            "cache_key": model_cache_key(self.model_path),
        }


def model_cache_key(model_path: Path) -> str:
    """Names a model file cheaply: its resolved path, size and modification time."""
    try:
        stat = model_path.stat()
    except OSError:
        return ""  # opening it will fail with a clearer message
    text = f"{model_path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


COMPLETION_SLOT = "completion"  # the queue's name for the engine's completion slot (llama_lsp.h)


class Priority(IntEnum):
    """The engine's queues, most urgent first. Warming comes last, the likeliest next prompt first."""

    REQUEST = 0  # chat, code actions, the engine's info
    COMPLETION = 1  # inline completion while typing, and next-edit suggestions once it pauses
    # Warming (background work): a conversation with its latest answer, which a follow-up starts with;
    WARM_FOLLOW_UP = 2
    # a document's opening for its first question, on open and after an edit;
    WARM_DOCUMENT = 3
    # the completion slot on open (only the first completion in a file gains: typing keeps it current).
    WARM_COMPLETION = 4


class Job:
    """One queued piece of work; `cancel()` is safe from any thread."""

    def __init__(
        self,
        engine: Engine,
        run: Callable[[native.NativeEngine, Job], Any],
        priority: Priority = Priority.REQUEST,
        slot: str | None = None,
    ):
        self._engine = engine
        self.run = run
        self.priority = priority
        self.slot = slot  # the slot a chat job reads into
        self.future: Future[Any] = Future()
        self.cancelled = False
        self.preempted = False  # a background job stopped for a request; it runs again later
        self.preemptions = 0

    @property
    def background(self) -> bool:
        return self.priority >= Priority.WARM_FOLLOW_UP

    def cancel(self) -> None:
        self._engine._cancel(self)

    async def wait(self) -> Any:
        return await asyncio.wrap_future(self.future)


def _generate(
    engine: native.NativeEngine,
    job: Job,
    payload: dict[str, Any],
    send: Callable[[str], bool],
    keep_going: Callable[[str], bool] | None,
) -> ChatResult:
    """Runs one request on the worker: each piece is sent on, and the answer ends early where `send`
    fails, the job is cancelled, or `keep_going` says so (then it finished: "stop", the text kept)."""
    text = ""
    ended_early = False

    def piece(more: str) -> bool:
        nonlocal text, ended_early
        if not send(more):
            return False
        if keep_going is not None:
            text += more
            if not keep_going(text):
                ended_early = True
                return False
        return not job.cancelled

    result = ChatResult.from_native(engine.generate(payload, piece))
    if ended_early and result.finish_reason == "cancelled":
        result.finish_reason = "stop"
    return result


def _engine_error(error: NativeError) -> EngineError:
    return EngineError(str(error), error.kind)


class Engine:
    """Owns the native engine and the single thread that drives it (implements api.ChatEngine)."""

    can_warm = True

    def __init__(self, config: EngineConfig):
        self.config = config
        self._lock = threading.Lock()
        self._wakeup = threading.Condition(self._lock)
        self._queues: dict[Priority, deque[Job]] = {priority: deque() for priority in Priority}
        self._current: Job | None = None
        self._can_complete = False
        self._native: native.NativeEngine | None = None
        self._loaded: Future[dict[str, Any]] = Future()
        self._info_before_job: dict[str, Any] | None = None  # info() while a request runs
        self._last_save = time.monotonic()
        self._closed = False
        self._thread = threading.Thread(target=self._work, name="llama-lsp-engine", daemon=True)
        self._thread.start()

    # ---- lifecycle -------------------------------------------------------------------------------

    async def ready(self) -> dict[str, Any]:
        """Waits for the model to load; returns the engine's info, or raises the load error."""
        # Shielded: a waiter that gives up must not cancel the load itself, which the worker thread
        # finishes (and later closes) whatever the waiters do.
        return await asyncio.shield(asyncio.wrap_future(self._loaded))

    @property
    def can_complete(self) -> bool:
        """Whether complete() works: known once the model is loaded (its vocabulary has FIM tokens)."""
        return self._can_complete

    @property
    def queue_length(self) -> int:
        """Requests waiting or running (background work and completions not counted)."""
        with self._lock:
            running = self._current is not None and self._current.priority == Priority.REQUEST
            return len(self._queues[Priority.REQUEST]) + (1 if running else 0)

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)  # saves slot state; joins the worker thread

    def close(self, timeout: float = 60.0) -> None:
        """Cancels what runs, saves slot state and frees the model. Idempotent."""
        if self._closed:
            return
        with self._lock:
            self._closed = True
            running = self._current
            self._wakeup.notify()
        if running is not None:
            running.cancel()
        self._thread.join(timeout)

    # ---- requests --------------------------------------------------------------------------------

    def submit(
        self,
        request: ChatRequest,
        on_piece: Callable[[str], None] | None = None,
        loop: asyncio.AbstractEventLoop | None = None,
        priority: Priority = Priority.REQUEST,
        keep_going: Callable[[str], bool] | None = None,
    ) -> Job:
        """Queues a chat request. Pieces go to on_piece, on `loop` when given (else on the worker);
        `keep_going` (on the worker) sees the answer so far after each piece and may end it early.

        A background request (warming) runs only when no more urgent job waits, and never evicts a
        conversation's slot; a more urgent job preempts it, and it resumes from the chunks it had read.
        """
        background = priority >= Priority.WARM_FOLLOW_UP
        payload = replace(request, background=background).to_native()

        def send(text: str) -> bool:
            if on_piece is None:
                return True
            if loop is None:
                on_piece(text)
                return True
            try:
                loop.call_soon_threadsafe(on_piece, text)
            except RuntimeError:  # the loop is closed: nobody is listening any more
                return False
            return True

        def run(engine: native.NativeEngine, job: Job) -> ChatResult:
            return _generate(engine, job, payload, send, keep_going)

        return self._enqueue(run, priority, urgent=not background, slot=request.slot)

    def warm(self, request: ChatRequest, follow_up: bool = False) -> Job:
        """Reads the request's messages into its slot in the background, answering nothing; a
        follow-up's (a conversation with its latest answer) before a document's opening."""
        priority = Priority.WARM_FOLLOW_UP if follow_up else Priority.WARM_DOCUMENT
        return self.submit(replace(request, warm=True), priority=priority)

    async def generate(
        self,
        request: ChatRequest,
        on_piece: Callable[[str], None] | None = None,
        keep_going: Callable[[str], bool] | None = None,
    ) -> ChatResult:
        job = self.submit(request, on_piece, asyncio.get_running_loop(), keep_going=keep_going)
        try:
            result: ChatResult = await job.wait()
            return result
        except asyncio.CancelledError:
            job.cancel()
            raise

    async def complete(
        self, request: InfillRequest, keep_going: Callable[[str], bool] | None = None
    ) -> ChatResult:
        """Fills in the middle at the cursor, in the completion slot (see the module's docstring for
        how it yields to chat). `keep_going` runs on the engine's thread after each piece."""
        payload = request.to_native()

        def run(engine: native.NativeEngine, job: Job) -> ChatResult:
            return _generate(engine, job, payload, lambda _text: True, keep_going)

        job = self._enqueue(run, Priority.COMPLETION, urgent=True, slot=COMPLETION_SLOT)
        try:
            result: ChatResult = await job.wait()
        except asyncio.CancelledError:
            job.cancel()
            raise
        return result

    async def suggest(
        self, request: ChatRequest, keep_going: Callable[[str], bool] | None = None
    ) -> ChatResult:
        """Answers a next-edit request in its own slot, queued and stopped as a completion is.
        `keep_going` runs on the engine's thread after each piece."""
        payload = request.to_native()

        def run(engine: native.NativeEngine, job: Job) -> ChatResult:
            return _generate(engine, job, payload, lambda _text: True, keep_going)

        job = self._enqueue(run, Priority.COMPLETION, urgent=True, slot=request.slot)
        try:
            result: ChatResult = await job.wait()
        except asyncio.CancelledError:
            job.cancel()
            raise
        return result

    def warm_completion(self, request: InfillRequest) -> Job:
        """Reads a completion's prompt into the completion slot in the background. A completion that
        arrives meanwhile lets it finish its chunk: the start of its own prompt."""
        payload = replace(request, warm=True).to_native()

        def run(engine: native.NativeEngine, _job: Job) -> ChatResult:
            return ChatResult.from_native(engine.generate(payload))

        return self._enqueue(run, Priority.WARM_COMPLETION, slot=COMPLETION_SLOT)

    async def tokenize(self, request: dict[str, Any]) -> list[int]:
        result = await self._enqueue(lambda engine, _job: engine.tokenize(request)).wait()
        return list(result["tokens"])

    async def render(self, request: ChatRequest) -> str | None:
        # Urgent: a chat's first turn renders before it asks, and must not wait for a suggestion to end.
        result = await self._enqueue(
            lambda engine, _job: engine.tokenize(request.to_native()), urgent=True
        ).wait()
        return str(result["prompt"])

    async def info(self) -> dict[str, Any]:
        """What the engine is and holds, read between jobs. While a request or a completion runs or
        waits, it is the one read before that job began, at once: an answer can take minutes, and a
        status request must not wait for it."""
        with self._lock:
            running = self._current
            busy = (running is not None and not running.background) or self._queues[Priority.REQUEST]
            if busy and self._info_before_job is not None:
                return copy.deepcopy(self._info_before_job)
        result: dict[str, Any] = await self._enqueue(lambda engine, _job: engine.info()).wait()
        return result

    async def clear(self) -> None:
        await self._enqueue(lambda engine, _job: engine.clear()).wait()

    # ---- worker ----------------------------------------------------------------------------------

    def _enqueue(
        self,
        run: Callable[[native.NativeEngine, Job], Any],
        priority: Priority = Priority.REQUEST,
        urgent: bool = False,
        slot: str | None = None,
    ) -> Job:
        """Queues a job; `urgent` (a chat request or a completion) aborts background work at once
        rather than at the end of its chunk, unless that work reads the request's own slot: warming a
        conversation reads the start of its next prompt, so the chunk is work the request would do
        anyway. An urgent request stops a running completion."""
        job = Job(self, run, priority, slot)
        with self._lock:
            if self._closed:
                raise EngineClosed()
            self._queues[priority].append(job)
            running = self._current
            if running is not None and priority < running.priority and self._native is not None:
                if running.background:
                    running.preempted = True
                    if urgent and running.slot != slot:
                        self._native.cancel()
                    else:
                        self._native.yield_soon()
                elif urgent:  # a chat request and a running completion
                    running.cancelled = True
                    self._native.cancel()
            self._wakeup.notify()
        return job

    def _next(self) -> Job | None:
        """The next job to run, requests first; None once the engine is closed."""
        with self._lock:
            while not self._closed and not any(self._queues.values()):
                self._wakeup.wait()
            if self._closed:
                return None
            return next(queue for queue in self._queues.values() if queue).popleft()

    def _cancel(self, job: Job) -> None:
        with self._lock:
            job.cancelled = True
            if self._current is job and self._native is not None:
                self._native.cancel()

    def _open(self) -> native.NativeEngine:
        started = time.monotonic()
        engine = native.NativeEngine(self.config.model_path, self.config.native_options())
        info = engine.info()
        self._can_complete = any(slot.get("completion") for slot in info["slots"])
        if self.config.state_dir is not None:
            try:
                info["restore"] = engine.restore_slots(self.config.state_dir)
            except NativeError as exc:
                log.warning("could not restore slot state: %s", exc)
        info["t_load_ms"] = (time.monotonic() - started) * 1000
        log.info("model loaded in %.1f s: %s", info["t_load_ms"] / 1000, info.get("model_desc"))
        self._native = engine
        self._loaded.set_result(info)
        return engine

    def _save(self, engine: native.NativeEngine) -> dict[str, Any]:
        self._last_save = time.monotonic()
        if self.config.state_dir is None:
            return {"saved": 0}
        return engine.save_slots(self.config.state_dir)

    def _work(self) -> None:
        try:
            engine = self._open()
        except BaseException as exc:
            failure: BaseException = exc
            if isinstance(exc, NativeError):
                failure = _engine_error(exc)
            elif isinstance(exc, Exception):  # a load that failed unforeseen still fails as a load
                log.exception("the model could not be loaded")
                failure = EngineError(f"{type(exc).__name__}: {exc}", "model_load")
            self._loaded.set_exception(failure)
            self._fail_queued(failure)
            return
        try:
            while (job := self._next()) is not None:
                self._run(engine, job)
                if (
                    self.config.state_dir is not None
                    and not self._queues[Priority.REQUEST]
                    and time.monotonic() - self._last_save > self.config.save_interval_s
                ):
                    self._save_quietly(engine)
        finally:
            self._save_quietly(engine)
            with self._lock:
                self._native = None
            engine.close()
            self._fail_queued(EngineClosed())

    def _run(self, engine: native.NativeEngine, job: Job) -> None:
        with self._lock:
            # A preempted job comes back already running.
            if not job.future.running() and not job.future.set_running_or_notify_cancel():
                return  # the task awaiting it was cancelled while it waited in the queue
            if job.cancelled:
                job.future.set_result(ChatResult.cancelled_before_start())
                return
            if not job.background:
                self._info_before_job = self._read_info(engine)
            # From here on a cancel of this job reaches the native engine, even one that comes before
            # its generate call starts; a late cancel meant for the job before must not stop it.
            engine.clear_cancel()
            self._current = job
            if job.background and any(self._queues[p] for p in Priority if p < job.priority):
                job.preempted = True
                engine.yield_soon()
        try:
            result = job.run(engine, job)
            with self._lock:
                if job.preempted and not job.cancelled and self._resumable(result):
                    # Stopped for a more urgent job: it resumes after it, from the chunks it read.
                    job.preempted = False
                    job.preemptions += 1
                    self._queues[job.priority].appendleft(job)
                    return
            job.future.set_result(result)
        except NativeError as exc:
            job.future.set_exception(_engine_error(exc))
        except BaseException as exc:  # the worker must outlive any one request
            job.future.set_exception(exc)
        finally:
            with self._lock:
                self._current = None

    @staticmethod
    def _read_info(engine: native.NativeEngine) -> dict[str, Any] | None:
        try:
            return engine.info()  # tens of microseconds
        except NativeError as exc:
            log.warning("could not read the engine's info: %s", exc)
            return None

    @staticmethod
    def _resumable(result: Any) -> bool:
        return isinstance(result, ChatResult) and result.finish_reason == "cancelled"

    def _save_quietly(self, engine: native.NativeEngine) -> None:
        try:
            self._save(engine)
        except NativeError as exc:
            log.warning("could not save slot state: %s", exc)

    def _fail_queued(self, exc: BaseException) -> None:
        with self._lock:
            self._closed = True  # a load that failed ends the engine as close() does
            jobs = [job for queue in self._queues.values() for job in queue]
            for queue in self._queues.values():
                queue.clear()
        for job in jobs:
            if not job.future.done():
                job.future.set_exception(exc)
