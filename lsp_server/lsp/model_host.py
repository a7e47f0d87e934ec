"""The one owner of the engine: it loads, reloads and closes it, one load at a time.

The engine is the model in this process (engine.local), or an OpenAI-compatible server when the
`backend` setting names one (engine.remote); for a server, "loading" is checking that it answers and
serves the model, and a check that failed is tried again by the next request (the server may be up
by then).

Every request asks the host for the engine; settings changes ask it for a new one. Loads never overlap:
a request that arrives while the model loads (or while the client's configuration is still on its way)
waits for that load instead of starting its own, and a reload closes the old engine before the new one
loads, so its threads and KV cache are freed. Quick successive settings changes collapse into one load
of the newest settings. A request holds the engine through a HostedEngine: what a reload shut out of
the old engine before it began (queued behind another answer, or asked for after the close) runs on the
new one.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

from ..engine import (
    ChatEngine,
    ChatRequest,
    ChatResult,
    Engine,
    EngineClosed,
    EngineConfig,
    EngineError,
    InfillRequest,
    model_cache_key,
    models,
)
from ..engine.api import WarmJob
from .settings import Settings

log = logging.getLogger("llama_lsp.model_host")

# How long a request waits for the client's configuration before the model loads with what is known.
CONFIGURATION_WAIT_S = 10.0

T = TypeVar("T")


class ModelUnavailable(Exception):
    """The model could not be loaded; the message names the fix."""

    def __init__(self, message: str, install_model: str | None = None, retry: bool = False):
        super().__init__(message)
        self.install_model = install_model
        self.retry = retry  # the next request loads again (a remote server may be up by then)


class LoadEvents(Protocol):
    """What the host tells the server about loads; the server turns these into status and progress."""

    def load_started(self, settings: Settings) -> Awaitable[Callable[[], None]]:
        """A load starts; returns a function to call when it ends, whatever the outcome."""

    def load_finished(self, settings: Settings, info: dict[str, Any]) -> None: ...

    def load_failed(self, settings: Settings, error: ModelUnavailable) -> None: ...


class ModelHost:
    def __init__(self, events: LoadEvents, current_settings: Callable[[], Settings]):
        self._events = events
        self._current_settings = current_settings
        self.engine: ChatEngine | None = None
        self.error: ModelUnavailable | None = None
        self.n_loads = 0
        self._target: Settings | None = None  # the settings the engine should have
        self._done_for: tuple[Any, ...] | None = None  # engine fields of the last finished load
        self._driver: asyncio.Task[None] | None = None
        self._requested = asyncio.Event()
        self._closed = False

    @property
    def loading(self) -> bool:
        return self._driver is not None and not self._driver.done()

    def want(self, settings: Settings) -> None:
        """Asks for an engine with these settings; loads in the background unless it already has one."""
        if self._closed:
            return
        self._target = settings
        self._requested.set()
        if settings.engine_fields() == self._done_for and not self.loading:
            return
        if not self.loading:
            self._driver = asyncio.ensure_future(self._drive())

    async def ready(self) -> ChatEngine:
        """The loaded engine, as a request holds it (HostedEngine); waits for the load in flight; raises
        ModelUnavailable if it cannot load."""
        return HostedEngine(self, await self.loaded())

    async def loaded(self) -> ChatEngine:
        """The loaded engine itself (see `ready`)."""
        if not self._requested.is_set():
            try:  # the server asks once the client's configuration has arrived
                await asyncio.wait_for(self._requested.wait(), CONFIGURATION_WAIT_S)
            except asyncio.TimeoutError:
                log.warning(
                    "no configuration after %.0f s; loading the model as configured", CONFIGURATION_WAIT_S
                )
                self.want(self._current_settings())
        if self.engine is None and self.error is not None and self.error.retry and not self.loading:
            self._done_for = None
            if self._target is not None:
                self.want(self._target)
        while self.loading:
            assert self._driver is not None
            await asyncio.shield(self._driver)
        if self._closed:
            raise ModelUnavailable("the server is shutting down")
        if self.engine is None:
            raise self.error or ModelUnavailable("the model is not loaded")
        return self.engine

    async def close(self) -> None:
        """Closes the engine (it saves its slots first); later requests get ModelUnavailable."""
        self._closed = True
        self._requested.set()
        if self._driver is not None and not self._driver.done():
            self._driver.cancel()
            await asyncio.gather(self._driver, return_exceptions=True)
        await self._close_engine()

    async def _drive(self) -> None:
        """Loads until the engine matches the newest settings asked for."""
        while not self._closed and self._target is not None:
            target = self._target
            if target.engine_fields() == self._done_for:
                return
            await self._close_engine()
            try:
                self.engine = await self._load(target)
                self.error = None
            except ModelUnavailable as exc:
                self.error = exc
                self._events.load_failed(target, exc)
            self._done_for = target.engine_fields()

    async def _load(self, settings: Settings) -> ChatEngine:
        engine, unavailable = self._engine_for(settings)
        self.n_loads += 1
        end_progress = await self._events.load_started(settings)
        try:
            info = await engine.ready()
        except EngineError as exc:
            await engine.aclose()
            raise unavailable(exc) from None
        except asyncio.CancelledError:  # closed while loading: free what was loaded
            await asyncio.shield(engine.aclose())
            raise
        finally:
            end_progress()
        self._events.load_finished(settings, info)
        return engine

    @staticmethod
    def _engine_for(settings: Settings) -> tuple[ChatEngine, Callable[[EngineError], ModelUnavailable]]:
        """The engine the settings ask for, not loaded yet, and how to report that it failed to load."""
        if settings.backend is not None:
            from ..engine.remote import RemoteEngine  # the openai package is slow to import

            return RemoteEngine(settings.backend), lambda exc: ModelUnavailable(str(exc), retry=True)
        try:
            model_path = models.resolve(settings.model)
        except models.ModelError as exc:
            raise ModelUnavailable(str(exc), exc.install_name) from None
        engine = Engine(
            EngineConfig(
                model_path=model_path,
                n_ctx=settings.context_size,
                n_threads=settings.threads,
                n_slots=settings.slots,
                speculative=settings.speculative,
                state_dir=settings.cache_dir / "state" / model_cache_key(model_path),
            )
        )
        return engine, lambda exc: ModelUnavailable(f"could not load {model_path}: {exc}")

    async def _close_engine(self) -> None:
        engine, self.engine = self.engine, None
        if engine is not None:
            await engine.aclose()


class HostedEngine:
    """The engine as a request holds it (an api.ChatEngine): the one it was given, until a reload closes
    that one before a model request of it began (the request was queued behind another answer, or asked
    after the close). Then the request runs on the engine the reload loads, instead of failing with
    EngineClosed. A request that was running when the engine closed ends cancelled, as it would on any
    close: it may have streamed a part of its answer already. Warming is not handed over: the server
    warms the new engine afresh."""

    def __init__(self, host: ModelHost, engine: ChatEngine) -> None:
        self._host = host
        self._engine = engine

    @property
    def can_warm(self) -> bool:
        return self._engine.can_warm

    @property
    def can_complete(self) -> bool:
        return self._engine.can_complete

    @property
    def queue_length(self) -> int:
        return self._engine.queue_length

    async def ready(self) -> dict[str, Any]:
        return await self._engine.ready()

    async def generate(
        self,
        request: ChatRequest,
        on_piece: Callable[[str], None] | None = None,
        keep_going: Callable[[str], bool] | None = None,
    ) -> ChatResult:
        return await self._on_the_newest(lambda engine: engine.generate(request, on_piece, keep_going))

    async def complete(
        self, request: InfillRequest, keep_going: Callable[[str], bool] | None = None
    ) -> ChatResult:
        return await self._on_the_newest(lambda engine: engine.complete(request, keep_going))

    async def suggest(
        self, request: ChatRequest, keep_going: Callable[[str], bool] | None = None
    ) -> ChatResult:
        return await self._on_the_newest(lambda engine: engine.suggest(request, keep_going))

    def warm(self, request: ChatRequest, follow_up: bool = False) -> WarmJob:
        return self._engine.warm(request, follow_up)

    def warm_completion(self, request: InfillRequest) -> WarmJob:
        return self._engine.warm_completion(request)

    async def info(self) -> dict[str, Any]:
        return await self._on_the_newest(lambda engine: engine.info())

    async def render(self, request: ChatRequest) -> str | None:
        return await self._on_the_newest(lambda engine: engine.render(request))

    @property
    def hosted_engine(self) -> ChatEngine:
        """The engine itself, which outlives this request's hold on it: what per-engine caches key on."""
        return self._engine

    async def aclose(self) -> None:
        """Nothing: the host owns the engine and closes it; a request only holds it."""

    async def _on_the_newest(self, call: Callable[[ChatEngine], Awaitable[T]]) -> T:
        """`call` on the engine, or, when that engine closed before the call began, on the engine that
        replaced it (each reload may shut it out again, so as many times as there are reloads)."""
        while True:
            engine = self._engine
            try:
                return await call(engine)
            except EngineClosed as closed:
                try:
                    newer = await self._host.loaded()
                except ModelUnavailable as exc:  # shutting down, or the new model failed to load
                    raise EngineClosed(str(exc)) from None
                if newer is engine:
                    raise closed from None
                log.info("a request the engine's reload shut out runs on the new engine")
                self._engine = newer
