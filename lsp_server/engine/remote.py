"""The remote engine: the same interface as the in-process one, served by an OpenAI-compatible server.

A team runs one server (llama.cpp's llama-server, vLLM, SGLang) and every editor's language server
talks to it through the official `openai` client, streaming. Everything above the engine stays as it
is: conversations laid out stable-first (so the server's own prefix cache hits), tools, the sandbox,
code actions, verification. What the server cannot do, this engine does not pretend to: it warms
nothing, and a cached-token count the server does not report is unknown (None), not 0.

Faults become EngineErrors whose kind is one of api.BACKEND_FAULTS and whose message names the fix.
The client retries with backoff what is safe to retry (a connection that failed, 429, 5xx, all before
any of the answer arrived); a stream that breaks off midway is an error, not retried.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable
from typing import Any

import openai

from .api import ChatRequest, ChatResult, EngineError, InfillRequest, RemoteConfig, Stats, ToolCall
from .tool_calls import extract_json_call, tool_call_start

log = logging.getLogger("llama_lsp.engine.remote")


class RemoteEngine:
    """An OpenAI-compatible server as the engine (implements api.ChatEngine)."""

    can_warm = False  # the server keeps its own cache; reading ahead would cost the whole team
    # Inline completion from a shared server is not built: the OpenAI API has no fill-in-the-middle
    # call that every server serves (llama-server's is /infill, outside it).
    can_complete = False

    def __init__(self, config: RemoteConfig):
        self.config = config
        key = os.environ.get(config.api_key_env) if config.api_key_env else None
        self._key_missing = bool(config.api_key_env) and not key
        self._client = openai.AsyncOpenAI(
            base_url=config.url,
            api_key=key or "none",  # a server without keys ignores it
            timeout=openai.Timeout(config.timeout_s, connect=config.connect_timeout_s),
            max_retries=config.max_retries,
        )
        self._running = 0
        # llama-server reads tool_choice as a string only (an object silently becomes "auto").
        self._named_tool_choice = True
        self._info: dict[str, Any] = {}

    @property
    def queue_length(self) -> int:
        return self._running

    async def ready(self) -> dict[str, Any]:
        """Checks that the server answers and serves the configured model."""
        if self._key_missing:
            raise EngineError(
                f"the environment variable {self.config.api_key_env} (llamaLsp.backend.apiKeyEnv) is not "
                "set: set it to the API key in the environment the editor starts the server in",
                "unauthorized",
            )
        started = time.monotonic()
        try:
            listing = await self._client.models.list()
        except openai.NotFoundError:
            raise EngineError(
                f"{self.config.url} has no /models: is llamaLsp.backend.url the API's base URL "
                "(it usually ends in /v1)?",
                "model_not_found",
            ) from None
        except openai.APIError as exc:
            raise self._fault(exc) from None
        served: dict[str, str] = {}  # model name -> who serves it
        for model in listing.data:
            extra = model.model_extra or {}
            for name in [model.id, *extra.get("aliases", [])]:
                served[name] = str(getattr(model, "owned_by", ""))
        if self.config.model not in served:
            raise EngineError(
                f"{self.config.url} serves {', '.join(sorted(served)) or 'no model'}, not "
                f"{self.config.model}: set llamaLsp.backend.model to one of them",
                "model_not_found",
            )
        self._named_tool_choice = served[self.config.model] != "llamacpp"
        self._info = {
            "backend": "remote",
            "url": self.config.url,
            "model": self.config.model,
            "model_desc": f"{self.config.model} at {self.config.url}",
            "owned_by": served[self.config.model],
            "slots": [],  # the server's slots are its own
            "t_load_ms": (time.monotonic() - started) * 1000,
        }
        return dict(self._info)

    async def info(self) -> dict[str, Any]:
        return {**self._info, "running": self._running}

    def warm(self, request: ChatRequest, follow_up: bool = False) -> Any:
        raise EngineError("a remote backend is not warmed from here", "unsupported")

    def warm_completion(self, request: InfillRequest) -> Any:
        raise EngineError("inline completion needs the local backend", "unsupported")

    async def complete(
        self, request: InfillRequest, keep_going: Callable[[str], bool] | None = None
    ) -> ChatResult:
        raise EngineError("inline completion needs the local backend", "unsupported")

    async def aclose(self) -> None:
        await self._client.close()

    async def generate(
        self, request: ChatRequest, on_piece: Callable[[str], None] | None = None
    ) -> ChatResult:
        if request.prompt is not None or request.warm:
            raise EngineError("raw prompts and warming need the local engine", "invalid_request")
        self._running += 1
        try:
            return await self._stream(request, on_piece or (lambda _text: None))
        finally:
            self._running -= 1

    async def _stream(self, request: ChatRequest, on_piece: Callable[[str], None]) -> ChatResult:
        answer = _Answer(request, on_piece)
        started = time.monotonic()
        try:
            stream = await self._client.chat.completions.create(**self._params(request))
        except openai.APIError as exc:
            raise self._fault(exc) from None
        try:
            async for chunk in stream:
                answer.add(chunk, time.monotonic() - started)
        except openai.APIError as exc:
            raise self._fault(exc, midway=True) from None
        except Exception as exc:  # the connection dropped, or the server sent something unreadable
            raise EngineError(
                f"the backend's answer broke off midway ({type(exc).__name__}: {exc}); ask again",
                "stream_broken",
            ) from None
        finally:
            await stream.close()  # on cancel too: closing the stream is how the server learns of it
        if not answer.finished:
            raise EngineError(
                "the backend's answer ended without a finish reason; ask again", "stream_broken"
            )
        return answer.result(time.monotonic() - started)

    def _params(self, request: ChatRequest) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": self.config.model,
            "messages": request.messages,
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "top_p": request.top_p,
            "seed": request.seed,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if request.stop:
            params["stop"] = request.stop
        if request.temperature > 0:
            params["extra_body"] = {"top_k": request.top_k}
        if request.tools:
            params["tools"] = request.tools
            params["tool_choice"] = self._tool_choice(request)
            params["parallel_tool_calls"] = request.parallel_tool_calls
        return params

    def _tool_choice(self, request: ChatRequest) -> Any:
        allowed = request.allowed_tools or []
        if request.tool_choice == "required" and len(allowed) == 1 and self._named_tool_choice:
            return {"type": "function", "function": {"name": allowed[0]}}
        return request.tool_choice

    def _fault(self, exc: openai.APIError, midway: bool = False) -> EngineError:
        """The error a user can act on, for what the client raised."""
        url, detail = self.config.url, _server_message(exc)
        if isinstance(exc, openai.APITimeoutError):
            return EngineError(
                f"the backend at {url} sent nothing for {self.config.timeout_s:g} s "
                f"({self.config.max_retries} retries): it may be overloaded; llamaLsp.backend.timeout "
                "sets how long to wait",
                "timeout",
            )
        if isinstance(exc, openai.APIConnectionError):
            return EngineError(
                f"could not reach the backend at {url} ({_cause(exc)}): is the server running, and is "
                "llamaLsp.backend.url right?",
                "unreachable",
            )
        if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
            fix = (
                f"check the key in the environment variable {self.config.api_key_env}"
                if self.config.api_key_env
                else "set llamaLsp.backend.apiKeyEnv to the name of an environment variable holding the key"
            )
            return EngineError(
                f"the backend at {url} refused the request ({exc.status_code} {detail}): {fix}",
                "unauthorized",
            )
        if isinstance(exc, openai.NotFoundError):
            return EngineError(
                f"the backend at {url} has no model {self.config.model} (404 {detail}): set "
                "llamaLsp.backend.model to a model it serves",
                "model_not_found",
            )
        if isinstance(exc, openai.RateLimitError):
            return EngineError(
                f"the backend at {url} is overloaded (429 {detail}, {self.config.max_retries} retries): "
                "try again in a moment",
                "overloaded",
            )
        if isinstance(exc, openai.APIStatusError) and exc.status_code < 500:
            kind = "context_overflow" if "context" in detail.lower() else "invalid_request"
            return EngineError(
                f"the backend at {url} refused the request ({exc.status_code}): {detail}", kind
            )
        where = "midway through the answer" if midway else f"after {self.config.max_retries} retries"
        return EngineError(f"the backend at {url} failed {where}: {detail}; ask again", "server_error")


class _Answer:
    """One streamed answer as it arrives: its text (sent on as far as it cannot be a tool call yet),
    the tool calls assembled from their deltas, and the server's figures."""

    def __init__(self, request: ChatRequest, on_piece: Callable[[str], None]):
        self._on_piece = on_piece
        may_call = bool(request.tools) and request.tool_choice != "none"
        self._tool_names: list[str] = []
        if may_call:
            declared = [tool["function"]["name"] for tool in request.tools or []]
            self._tool_names = request.allowed_tools or declared
        self.content = ""
        self._sent = 0
        self._calls: dict[int, dict[str, str]] = {}
        self.finished = False
        self._finish_reason = "stop"
        self._first_token_s: float | None = None
        self._usage: Any = None
        self._timings: dict[str, Any] = {}

    def add(self, chunk: Any, elapsed_s: float) -> None:
        if chunk.usage is not None:
            self._usage = chunk.usage
        self._timings = (chunk.model_extra or {}).get("timings") or self._timings  # llama-server's
        for choice in chunk.choices[:1]:
            delta = choice.delta
            if (delta.content or delta.tool_calls) and self._first_token_s is None:
                self._first_token_s = elapsed_s
            for call in delta.tool_calls or []:
                entry = self._calls.setdefault(call.index, {"id": "", "name": "", "arguments": ""})
                entry["id"] = call.id or entry["id"]
                if call.function is not None:
                    entry["name"] += call.function.name or ""
                    entry["arguments"] += call.function.arguments or ""
            if delta.content:
                self.content += delta.content
                self._send(self._sendable())
            if choice.finish_reason is not None:
                self.finished = True
                self._finish_reason = choice.finish_reason

    def _sendable(self) -> int:
        """How much of the content may be shown: not what may be the start of a tool call written as
        JSON (the local engine's own rule)."""
        if not self._tool_names:
            return len(self.content)
        return tool_call_start(self.content, self._tool_names)

    def _send(self, upto: int) -> None:
        if upto > self._sent:
            self._on_piece(self.content[self._sent : upto])
            self._sent = upto

    def result(self, elapsed_s: float) -> ChatResult:
        calls = [
            ToolCall(entry["id"] or f"call_{index}", entry["name"], _arguments(entry["arguments"]))
            for index, entry in sorted(self._calls.items())
        ]
        content = self.content
        if not calls and self._tool_names:
            # A call written in the content (a ```json fence, bare JSON), as the local engine accepts it.
            found = extract_json_call(content, self._tool_names)
            if found is not None:
                calls = [ToolCall("call_0", found.name, found.arguments)]
                content = found.rest
        if not calls:
            self._send(len(content))  # what was held back in case it began a call
        finish_reason = "tool_calls" if calls else _FINISH_REASONS.get(self._finish_reason, "stop")
        return ChatResult(
            content.strip() if calls else content, calls, finish_reason, [], self._stats(elapsed_s)
        )

    def _stats(self, elapsed_s: float) -> Stats:
        usage, timings = self._usage, self._timings
        first_token_s = self._first_token_s if self._first_token_s is not None else elapsed_s
        n_prompt = (
            usage.prompt_tokens
            if usage is not None
            else int(timings.get("prompt_n", 0)) + int(timings.get("cache_n", 0))
        )
        details = getattr(usage, "prompt_tokens_details", None)
        n_reused: int | None = getattr(details, "cached_tokens", None)
        if n_reused is None and "cache_n" in timings:
            n_reused = int(timings["cache_n"])
        n_evaluated = int(timings.get("prompt_n", n_prompt - (n_reused or 0)))
        return Stats(
            n_prompt=n_prompt,
            n_common=n_reused or 0,
            n_reused=n_reused,
            n_evaluated=n_evaluated,
            n_generated=usage.completion_tokens if usage is not None else int(timings.get("predicted_n", 0)),
            t_prefill_ms=float(timings.get("prompt_ms", first_token_s * 1000)),
            t_first_token_ms=first_token_s * 1000,
            t_decode_ms=float(timings.get("predicted_ms", (elapsed_s - first_token_s) * 1000)),
        )


_FINISH_REASONS = {"stop": "stop", "length": "length", "tool_calls": "tool_calls"}


def _arguments(text: str) -> dict[str, Any] | str:
    """A call's arguments as an object; text that is not one goes to the tool as it is, which says why."""
    try:
        value = json.loads(text) if text.strip() else {}
    except ValueError:
        return text
    return value if isinstance(value, dict) else text


def _server_message(exc: openai.APIError) -> str:
    """What the server said was wrong (its error object's message), else the client's summary."""
    body = exc.body if isinstance(exc.body, dict) else {}
    error = body.get("error")
    message = error.get("message") if isinstance(error, dict) else body.get("message")
    return str(message) if message else exc.message


def _cause(exc: BaseException) -> str:
    """The innermost reason a connection failed (e.g. "Connection refused"), not the client's wrapper."""
    while exc.__cause__ is not None or exc.__context__ is not None:
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    return str(exc) or type(exc).__name__
