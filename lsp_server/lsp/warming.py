"""Warming the cache while the user reads, so that the next question evaluates only itself.

When a document is opened, and once typing in it has paused, the prompts a question about it would
start with (TurnService.warm_requests) are read into the cache in the background; after each answer,
the conversation with that answer is read too, so that a follow-up evaluates only the new question.
Background work runs only while no request waits, a request preempts it (the engine keeps the chunks
it read), and it never evicts a conversation's slot. The most recently opened or edited documents are
warmed, at most one fewer than the slots, so that a conversation always has a slot of its own. With MCP
tools chosen per question, the document used last also gets an opening for each server (at most two
fewer than the slots; TurnService.mcp_warm_requests), each in a slot of its own, which the budget of
documents leaves: a question that names a server then reads only itself too. A document is warm (the
status) once all its openings are read.

An opened document is also read into the completion slot, as the lines above a cursor at its end: the
first inline completion in it then reads only the cursor's line and what follows (typing keeps that
slot current from then on).
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Callable
from typing import Protocol

from ..engine import ChatEngine, ChatRequest, EngineError, InfillRequest
from ..engine.api import WarmJob
from .settings import Settings
from .turns import TurnService, new_conversation_slot

log = logging.getLogger("llama_lsp.warming")

TYPING_PAUSE_S = 1.0  # a change is warmed once the document has not changed for this long


class WarmingContext(Protocol):
    @property
    def settings(self) -> Settings: ...

    @property
    def engine(self) -> ChatEngine | None: ...

    async def ready_engine(self) -> ChatEngine: ...


class Warmer:
    """Schedules the background reads and knows which open documents are warm now."""

    def __init__(
        self,
        server: WarmingContext,
        turns: TurnService,
        on_change: Callable[[], None],
        completion_request: Callable[[str], InfillRequest | None],
    ):
        self._server = server
        self._turns = turns
        self._on_change = on_change  # the set of warm documents changed
        self._completion_request = completion_request  # what typing in a document starts from
        self._completion: tuple[str, asyncio.Task[None]] | None = None  # the document, its reading
        self._recent: OrderedDict[str, None] = OrderedDict()  # open documents, most recently used last
        self._tasks: dict[str, asyncio.Task[None]] = {}  # one pending or running warming per document
        self._warm: set[str] = set()
        self._after_answer: set[asyncio.Task[None]] = set()

    @property
    def warm_uris(self) -> list[str]:
        """The open documents whose opening is in the cache now, in the order they were last used."""
        return [uri for uri in self._recent if uri in self._warm]

    # ---- events --------------------------------------------------------------------------------------

    def opened(self, uri: str) -> None:
        self._schedule(uri, delay=0.0)
        self._warm_completion(uri)

    def changed(self, uri: str) -> None:
        self._schedule(uri, delay=TYPING_PAUSE_S)

    def closed(self, uri: str) -> None:
        if self._completion is not None and self._completion[0] == uri:
            self._completion[1].cancel()
        self._stop(uri)
        self._recent.pop(uri, None)
        self._turns.forget(uri)
        self._set_warm(uri, False)

    def answered(self, request: ChatRequest) -> None:
        """Reads a conversation's latest answer into its slot, for the follow-up."""
        if not self._server.settings.warm:
            return
        task = asyncio.ensure_future(self._after(request))
        self._after_answer.add(task)
        task.add_done_callback(self._after_answer.discard)

    def rewarm(self) -> None:
        """Warms every recent document again (a new engine was loaded)."""
        for uri in list(self._recent):
            self._schedule(uri, delay=0.0)
        if self._recent:
            self._warm_completion(next(reversed(self._recent)))

    def stop_all(self) -> None:
        for uri in list(self._tasks):
            self._stop(uri)
        for task in list(self._after_answer):
            task.cancel()
        if self._completion is not None:
            self._completion[1].cancel()

    # ---- work ----------------------------------------------------------------------------------------

    def _schedule(self, uri: str, delay: float) -> None:
        self._stop(uri)
        self._recent[uri] = None
        self._recent.move_to_end(uri)
        self._set_warm(uri, False)
        if not self._server.settings.warm:
            return
        # A slot stays free for a conversation; the openings with MCP tools take theirs.
        budget = max(1, self._server.settings.slots - 1 - self._turns.n_mcp_openings)
        kept = list(self._recent)[-budget:] if budget > 0 else []
        for other in self._recent:
            if other not in kept:
                self._stop(other)  # its slot goes to a more recently used document
                self._set_warm(other, False)
        if uri in kept:
            self._tasks[uri] = asyncio.ensure_future(self._warm_document(uri, delay))

    def _warm_completion(self, uri: str) -> None:
        """Reads the document into the completion slot (one document at a time: the latest)."""
        if self._completion is not None:
            self._completion[1].cancel()
        if self._server.settings.warm:
            self._completion = (uri, asyncio.ensure_future(self._read_completion(uri)))

    async def _read_completion(self, uri: str) -> None:
        def start(engine: ChatEngine) -> WarmJob | None:
            request = self._completion_request(uri)
            return engine.warm_completion(request) if request is not None and engine.can_complete else None

        await self._in_background(f"completion for {uri}", start)

    def _stop(self, uri: str) -> None:
        task = self._tasks.pop(uri, None)
        if task is not None:
            task.cancel()

    async def _after(self, request: ChatRequest) -> None:
        await self._read(request, follow_up=True)
        await self._recheck()

    async def _recheck(self) -> None:
        """Forgets warm documents whose slot a conversation has taken since (the least recently used
        slot goes to a new conversation, warm or not)."""
        engine = self._server.engine
        if engine is None or not self._warm:
            return
        try:
            held = {s["key"] for s in (await engine.info())["slots"] if s["n_tokens"]}
        except EngineError:
            return
        for uri in list(self._warm):
            if new_conversation_slot(uri) not in held:
                self._set_warm(uri, False)

    async def _warm_document(self, uri: str, delay: float) -> None:
        try:
            await asyncio.sleep(delay)
            requests = await self._turns.warm_requests(uri)
            for request in requests:
                if not await self._read(request):
                    return
            if not requests:
                return
            if self._recent and next(reversed(self._recent)) == uri:  # the document used last
                # One slot stays for a conversation, one holds the opening without MCP tools.
                at_most = self._server.settings.slots - 2
                for request in await self._turns.mcp_warm_requests(uri, at_most):
                    if not await self._read(request):
                        break  # no slot for it: the openings read so far serve all the same
            self._set_warm(uri, True)
        finally:
            if self._tasks.get(uri) is asyncio.current_task():
                del self._tasks[uri]

    async def _read(self, request: ChatRequest, follow_up: bool = False) -> bool:
        """Reads the request's messages into its slot; False when that did not happen."""
        # A remote backend's server keeps its own cache: nothing to read here.
        return await self._in_background(
            str(request.slot), lambda engine: engine.warm(request, follow_up) if engine.can_warm else None
        )

    async def _in_background(self, what: str, start: Callable[[ChatEngine], WarmJob | None]) -> bool:
        """Runs the background job `start` queues on the engine (None: nothing to do) to its end;
        False when it did not run or did not finish."""
        try:
            job = start(await self._server.ready_engine())
        except Exception as exc:  # no model (yet): there is nothing to warm
            log.debug("not warming %s: %s", what, exc)
            return False
        if job is None:
            return False
        try:
            result = await job.wait()
        except asyncio.CancelledError:
            job.cancel()  # the engine keeps what it read so far
            raise
        except EngineError as exc:  # "no_slot": every slot holds a conversation
            log.info("not warming %s: %s", what, exc)
            return False
        log.debug("warmed %s: %s", what, result.stats)
        return bool(result.finish_reason == "stop")

    def _set_warm(self, uri: str, warm: bool) -> None:
        if (uri in self._warm) == warm:
            return
        if warm:
            self._warm.add(uri)
        else:
            self._warm.discard(uri)
        self._on_change()
