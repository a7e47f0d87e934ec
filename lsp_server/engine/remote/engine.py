"""The remote engine: the same interface as the in-process one, served by an OpenAI-compatible server.

A team runs one server (llama.cpp's llama-server, vLLM, SGLang) and every editor's language server
talks to it through the official `openai` client, streaming. Everything above the engine stays as it
is: conversations laid out stable-first (so the server's own prefix cache hits), tools, the sandbox,
code actions, verification. What the server cannot do, this engine does not pretend to: it warms
nothing, and a cached-token count the server does not report is unknown (None), not 0.

The client retries with backoff what is safe to retry (a connection that failed, 429, 5xx, all before
any of the answer arrived); a stream that breaks off midway is an error, not retried. A request ends by
its deadline (RemoteConfig.deadline_s, retries included). What the server sends is read within the
limits of limits.py, as events (sse.py) that build the answer (stream.py); every failure becomes an
EngineError whose message names the fix (errors.py).
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from contextlib import aclosing
from typing import Any

import httpx2
import openai

from ..api import SECONDS_PER_TOKEN, ChatRequest, ChatResult, EngineError, InfillRequest, RemoteConfig
from .errors import Faults, Refused
from .limits import bound_body
from .sse import chunk_of, event_data
from .stream import StreamedAnswer

# A prompt's rendering (/apply-template) takes milliseconds; a chat waits on it, so not for long.
RENDER_TIMEOUT_S = 5.0


class RemoteEngine:
    """An OpenAI-compatible server as the engine (implements api.ChatEngine)."""

    can_warm = False  # the server keeps its own cache; reading ahead would cost the whole team
    # Inline completion from a shared server is not built: the OpenAI API has no fill-in-the-middle
    # call that every server serves (llama-server's is /infill, outside it).
    can_complete = False

    def __init__(self, config: RemoteConfig):
        self.config = config
        key = config.api_key()
        self._key_missing = bool(config.api_key_env) and not key
        self._faults = Faults(config)
        self._url = config.shown_url
        # The credentials go as basic auth, out of the URL, so that no log line of the HTTP client shows them.
        base_url, login = config.split_url()[0], config.login()
        self._client = openai.AsyncOpenAI(
            base_url=base_url,
            api_key=key or "none",  # a server without keys ignores it
            timeout=openai.Timeout(config.timeout_s, connect=config.connect_timeout_s),
            max_retries=config.max_retries,
            default_headers={"Accept-Encoding": "identity"},  # see limits.bound_body
            http_client=openai.DefaultAsyncHttpxClient(
                auth=httpx2.BasicAuth(*login) if login else None, event_hooks={"response": [bound_body]}
            ),
        )
        self._running = 0
        # llama-server reads tool_choice as a string only (an object silently becomes "auto").
        self._named_tool_choice = True
        # The model the requests name: the setting's, or (when it names none) the one the server serves.
        self._model = config.model
        self._info: dict[str, Any] = {}

    @property
    def queue_length(self) -> int:
        return self._running

    async def ready(self) -> dict[str, Any]:
        """Checks that the server answers and serves the configured model (or, when the setting names
        none, exactly one model: that one answers)."""
        if self._key_missing:
            raise EngineError(
                f"the environment variable {self.config.api_key_env} (llamaLsp.backend.apiKeyEnv) is not "
                "set: set it to the API key in the environment the editor starts the server in",
                "unauthorized",
            )
        started = time.monotonic()
        deadline = self.config.deadline_s(0)
        try:
            served = await asyncio.wait_for(self._served_models(), deadline)
        except asyncio.TimeoutError:
            raise self._faults.error(
                f"the backend at {self._url} did not list its models within {deadline:g} s: it may be "
                "overloaded; llamaLsp.backend.timeout sets how long to wait",
                "timeout",
            ) from None
        except openai.NotFoundError:
            raise self._faults.error(
                f"{self._url} has no /models: is llamaLsp.backend.url the API's base URL "
                "(it usually ends in /v1)?",
                "model_not_found",
            ) from None
        except openai.APIError as exc:
            raise self._fault(exc) from None
        except Refused as exc:
            raise self._faults.refused(exc) from None
        except Exception as exc:  # not JSON, or not a list of models
            raise self._faults.error(
                f"the backend at {self._url} sent a model list that cannot be read ({type(exc).__name__}: "
                f"{self._faults.quote(str(exc))}): is llamaLsp.backend.url an "
                "OpenAI-compatible API?",
                "server_error",
            ) from None
        names = self._faults.quote(", ".join(sorted(served)))
        model = self.config.model
        if model is None:
            ids = {model_id for model_id, _owner in served.values()}
            if not ids:
                raise self._faults.error(f"{self._url} serves no model: start it with one", "model_not_found")
            if len(ids) > 1:
                raise self._faults.error(
                    f"{self._url} serves several models ({names}): set llamaLsp.backend.model to one of them",
                    "model_not_found",
                )
            model = ids.pop()
        elif model not in served:
            raise self._faults.error(
                f"{self._url} serves {names or 'no model'}, not {model}: set "
                "llamaLsp.backend.model to one of them",
                "model_not_found",
            )
        self._model = model
        owner = served[model][1]
        self._named_tool_choice = owner != "llamacpp"
        shown = self._faults.quote(self.config.model or _shown_model(model))
        self._info = {
            "backend": "remote",
            "url": self._url,
            "model": self._faults.quote(model),
            "model_desc": f"{shown} at {self._url}",  # the status names the model by it
            "owned_by": self._faults.quote(owner),
            "slots": [],  # the server's slots are its own
            "t_load_ms": (time.monotonic() - started) * 1000,
        }
        return dict(self._info)

    async def _served_models(self) -> dict[str, tuple[str, str]]:
        """Model name -> (the model's id, who serves it), from the server's /models; llama-server's
        aliases are names of the model they come with."""
        served: dict[str, tuple[str, str]] = {}
        for model in (await self._client.models.list()).data:
            aliases = (model.model_extra or {}).get("aliases")
            for name in [model.id, *(aliases if isinstance(aliases, list) else [])]:
                served[str(name)] = (str(model.id), str(getattr(model, "owned_by", "")))
        return served

    async def info(self) -> dict[str, Any]:
        return {**self._info, "running": self._running}

    async def render(self, request: ChatRequest) -> str | None:
        """llama-server's /apply-template (beside the API's /v1); None where the server has none (a
        404, or an answer without a prompt); EngineError where it failed to answer."""
        root = self.config.split_url()[0].rstrip("/").removesuffix("/v1")
        body = {"messages": request.messages, "tools": request.tools or []}
        client = self._client.with_options(max_retries=0)  # a chat waits on it: no backing off
        try:
            answer = await asyncio.wait_for(
                client.post(f"{root}/apply-template", body=body, cast_to=object),
                min(self.config.deadline_s(0), RENDER_TIMEOUT_S),
            )
        except openai.NotFoundError:
            return None
        except asyncio.TimeoutError:
            raise self._faults.error(
                f"the backend at {self._url} did not render a prompt in time", "timeout"
            ) from None
        except openai.APIError as exc:
            raise self._fault(exc) from None
        except Exception as exc:  # not JSON, or the connection dropped
            raise self._faults.error(
                f"the backend's /apply-template failed ({type(exc).__name__})", "server_error"
            ) from None
        prompt = answer.get("prompt") if isinstance(answer, dict) else None
        return prompt if isinstance(prompt, str) else None

    def warm(self, request: ChatRequest, follow_up: bool = False) -> Any:
        raise EngineError("a remote backend is not warmed from here", "unsupported")

    def warm_completion(self, request: InfillRequest) -> Any:
        raise EngineError("inline completion needs the local backend", "unsupported")

    async def complete(
        self, request: InfillRequest, keep_going: Callable[[str], bool] | None = None
    ) -> ChatResult:
        raise EngineError("inline completion needs the local backend", "unsupported")

    async def suggest(
        self, request: ChatRequest, keep_going: Callable[[str], bool] | None = None
    ) -> ChatResult:
        # The server schedules its own requests: a suggestion is one more, which the client cancels when
        # the user types on.
        return await self.generate(request, keep_going=keep_going)

    async def aclose(self) -> None:
        await self._client.close()

    async def generate(
        self,
        request: ChatRequest,
        on_piece: Callable[[str], None] | None = None,
        keep_going: Callable[[str], bool] | None = None,
    ) -> ChatResult:
        if request.prompt is not None or request.warm:
            raise EngineError("raw prompts and warming need the local engine", "invalid_request")
        self._running += 1
        try:
            if self._model is None:  # the setting names none, and the server's model is not known yet
                await self.ready()
            result = await self._stream(request, on_piece or (lambda _text: None), keep_going)
        finally:
            self._running -= 1
        if request.continue_answer:
            # llama-server continues a last assistant message (its assistant prefill) and answers with
            # the whole answer, its start included, as the local engine does; a server that answers with
            # what follows the start only gets the start put back.
            start = request.messages[-1].get("content") or ""
            if not result.content.startswith(start):
                result.content = start + result.content
        return result

    async def _stream(
        self,
        request: ChatRequest,
        on_piece: Callable[[str], None],
        keep_going: Callable[[str], bool] | None = None,
    ) -> ChatResult:
        answer = StreamedAnswer(request, on_piece, keep_going)
        started = time.monotonic()
        deadline = self.config.deadline_s(request.max_tokens)
        try:
            await asyncio.wait_for(self._read(request, answer, started), deadline)
        except asyncio.TimeoutError:
            if not answer.finished:  # a server that never closes a finished answer has still answered
                raise self._faults.error(
                    f"the backend at {self._url} did not finish within {deadline:g} s "
                    f"(llamaLsp.backend.timeout, and {SECONDS_PER_TOKEN:g} s per token of "
                    "llamaLsp.maxTokens): it may be overloaded; ask again",
                    "timeout",
                ) from None
        if not answer.finished:
            raise self._faults.error(
                "the backend's answer ended without a finish reason; ask again", "stream_broken"
            )
        return answer.result(time.monotonic() - started)

    async def _read(self, request: ChatRequest, answer: StreamedAnswer, started: float) -> None:
        """Reads the answer's events into `answer` until the stream ends, or the answer is cut."""
        create = self._client.chat.completions.with_streaming_response.create
        try:
            async with (
                create(**self._params(request)) as response,
                aclosing(event_data(response.http_response.aiter_raw())) as events,
            ):
                async for data in events:
                    if data.startswith(b"[DONE]"):
                        break
                    answer.add(chunk_of(data), time.monotonic() - started)
                    if answer.cut or answer.ended_early:
                        break  # leaving closes the stream: that is how the server learns of it
        except openai.APIError as exc:
            raise self._fault(exc) from None
        except httpx2.TimeoutException as exc:
            if not answer.finished:  # a server that never closes a finished answer has still answered
                raise self._faults.midway(exc) from None
        except Exception as exc:  # refused, unreadable, an error event, or the connection dropped
            raise self._faults.midway(exc) from None

    def _params(self, request: ChatRequest) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": self._model,
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

    def _fault(self, exc: openai.APIError) -> EngineError:
        """The error for what the client raised; a model the server stopped serving is looked up again."""
        error = self._faults.fault(exc, self._model)
        if isinstance(exc, openai.NotFoundError) and self.config.model is None:
            self._model = None  # it serves another model now: the next request asks for it
        return error


def _shown_model(model_id: str) -> str:
    """A model as messages name it: llama-server started with `-m FILE` and no alias lists the file's
    path, shown as the file's name; any other id (e.g. vLLM's Qwen/Qwen2.5-Coder-7B-Instruct) as it is."""
    if model_id.lower().endswith(".gguf"):
        return re.split(r"[\\/]", model_id)[-1]
    return model_id
