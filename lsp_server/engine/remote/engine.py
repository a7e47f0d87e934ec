"""The remote engine: the same interface as the in-process one, served by an OpenAI-compatible server.

A team runs one server (llama.cpp's llama-server, vLLM, SGLang) and every editor's language server
talks to it through the official `openai` client, streaming. Everything above the engine stays as it
is: conversations laid out stable-first (so the server's own prefix cache hits), tools, the sandbox,
code actions, verification. What the server cannot do, this engine does not pretend to: it warms
nothing, and a cached-token count the server does not report is unknown (None), not 0.

Faults become EngineErrors whose kind is one of api.BACKEND_FAULTS and whose message names the fix.
The client retries with backoff what is safe to retry (a connection that failed, 429, 5xx, all before
any of the answer arrived); a stream that breaks off midway is an error, not retried.

Nothing the server sends is trusted to be reasonable: a request ends by its deadline
(RemoteConfig.deadline_s, retries included), the answer stops at max_tokens counted here (finish_reason
"length"), the event stream is read line by line within LINE_LIMIT and BODY_LIMIT, an error's body is
read to ERROR_BODY_LIMIT, each delta costs time in proportion to its own length, and every message that
shows the server's words or its URL goes through api.redact: no key, no credentials, at most 4 KB.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import aclosing
from typing import Any

import httpx2
import openai

from .api import (
    SECONDS_PER_TOKEN,
    ChatRequest,
    ChatResult,
    EngineError,
    InfillRequest,
    RemoteConfig,
    Stats,
    ToolCall,
    redact,
)
from .tool_calls import CallStartTracker, extract_json_call

LINE_LIMIT = 1 << 20  # bytes of one event's data: a chunk is a few hundred, a whole tool call fits
BODY_LIMIT = 64 << 20  # bytes of one response: a 32k-token answer's stream is about 15 MB
ERROR_BODY_LIMIT = 64 << 10  # bytes read of an error's body; the rest is never read
DETAIL_LIMIT = 1024  # bytes of the server's own words in a message
# The longest token of the tokenizers llama.cpp ships vocabularies for (a run of 512 spaces): an answer
# of n tokens has at most n * MAX_TOKEN_CHARS characters, whatever the tokenizer.
MAX_TOKEN_CHARS = 512


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
        self._secrets = config.secrets()
        self._url = config.shown_url
        # The credentials go as basic auth, out of the URL, so that no log line of the HTTP client shows them.
        base_url, login = config.split_url()[0], config.login()
        self._client = openai.AsyncOpenAI(
            base_url=base_url,
            api_key=key or "none",  # a server without keys ignores it
            timeout=openai.Timeout(config.timeout_s, connect=config.connect_timeout_s),
            max_retries=config.max_retries,
            default_headers={"Accept-Encoding": "identity"},  # see _bound_body
            http_client=openai.DefaultAsyncHttpxClient(
                auth=httpx2.BasicAuth(*login) if login else None, event_hooks={"response": [_bound_body]}
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
            raise self._error(
                f"the backend at {self._url} did not list its models within {deadline:g} s: it may be "
                "overloaded; llamaLsp.backend.timeout sets how long to wait",
                "timeout",
            ) from None
        except openai.NotFoundError:
            raise self._error(
                f"{self._url} has no /models: is llamaLsp.backend.url the API's base URL "
                "(it usually ends in /v1)?",
                "model_not_found",
            ) from None
        except openai.APIError as exc:
            raise self._fault(exc) from None
        except _Refused as exc:
            raise self._refused(exc) from None
        except Exception as exc:  # not JSON, or not a list of models
            raise self._error(
                f"the backend at {self._url} sent a model list that cannot be read ({type(exc).__name__}: "
                f"{redact(str(exc), self._secrets, DETAIL_LIMIT)}): is llamaLsp.backend.url an "
                "OpenAI-compatible API?",
                "server_error",
            ) from None
        names = redact(", ".join(sorted(served)), self._secrets, DETAIL_LIMIT)
        model = self.config.model
        if model is None:
            ids = {model_id for model_id, _owner in served.values()}
            if not ids:
                raise self._error(f"{self._url} serves no model: start it with one", "model_not_found")
            if len(ids) > 1:
                raise self._error(
                    f"{self._url} serves several models ({names}): set llamaLsp.backend.model to one of them",
                    "model_not_found",
                )
            model = ids.pop()
        elif model not in served:
            raise self._error(
                f"{self._url} serves {names or 'no model'}, not {model}: set "
                "llamaLsp.backend.model to one of them",
                "model_not_found",
            )
        self._model = model
        owner = served[model][1]
        self._named_tool_choice = owner != "llamacpp"
        shown = redact(self.config.model or _shown_model(model), self._secrets, DETAIL_LIMIT)
        self._info = {
            "backend": "remote",
            "url": self._url,
            "model": redact(model, self._secrets, DETAIL_LIMIT),
            "model_desc": f"{shown} at {self._url}",  # the status names the model by it
            "owned_by": redact(owner, self._secrets, DETAIL_LIMIT),
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
            raise self._error(
                f"the backend at {self._url} did not render a prompt in time", "timeout"
            ) from None
        except openai.APIError as exc:
            raise self._fault(exc) from None
        except Exception as exc:  # not JSON, or the connection dropped
            raise self._error(
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
        answer = _Answer(request, on_piece, keep_going)
        started = time.monotonic()
        deadline = self.config.deadline_s(request.max_tokens)
        try:
            await asyncio.wait_for(self._read(request, answer, started), deadline)
        except asyncio.TimeoutError:
            if not answer.finished:  # a server that never closes a finished answer has still answered
                raise self._error(
                    f"the backend at {self._url} did not finish within {deadline:g} s "
                    f"(llamaLsp.backend.timeout, and {SECONDS_PER_TOKEN:g} s per token of "
                    "llamaLsp.maxTokens): it may be overloaded; ask again",
                    "timeout",
                ) from None
        if not answer.finished:
            raise self._error(
                "the backend's answer ended without a finish reason; ask again", "stream_broken"
            )
        return answer.result(time.monotonic() - started)

    async def _read(self, request: ChatRequest, answer: _Answer, started: float) -> None:
        """Reads the answer's events into `answer` until the stream ends, or the answer is cut."""
        create = self._client.chat.completions.with_streaming_response.create
        try:
            async with (
                create(**self._params(request)) as response,
                aclosing(_event_data(response.http_response.aiter_raw())) as events,
            ):
                async for data in events:
                    if data.startswith(b"[DONE]"):
                        break
                    answer.add(_chunk(data), time.monotonic() - started)
                    if answer.cut or answer.ended_early:
                        break  # leaving closes the stream: that is how the server learns of it
        except openai.APIError as exc:
            raise self._fault(exc) from None
        except _Refused as exc:
            raise self._refused(exc) from None
        except _ServerError as exc:
            raise self._error(
                f"the backend at {self._url} failed midway through the answer: "
                f"{redact(str(exc), self._secrets, DETAIL_LIMIT)}; ask again",
                "server_error",
            ) from None
        except httpx2.TimeoutException:
            if not answer.finished:
                raise self._error(
                    f"the backend at {self._url} sent nothing for {self.config.timeout_s:g} s midway "
                    "through the answer: it may be overloaded; llamaLsp.backend.timeout sets how long to "
                    "wait",
                    "timeout",
                ) from None
        except ValueError as exc:  # not JSON, or not a chunk
            raise self._error(
                f"the backend's answer broke off midway (an unreadable event: "
                f"{redact(str(exc), self._secrets, DETAIL_LIMIT)}); ask again",
                "stream_broken",
            ) from None
        except Exception as exc:  # the connection dropped
            raise self._error(
                f"the backend's answer broke off midway ({type(exc).__name__}: "
                f"{redact(str(exc), self._secrets, DETAIL_LIMIT)}); ask again",
                "stream_broken",
            ) from None

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

    def _error(self, message: str, kind: str) -> EngineError:
        """An EngineError whose message may show the server's words: redacted and cut."""
        return EngineError(redact(message, self._secrets), kind)

    def _refused(self, exc: _Refused) -> EngineError:
        return self._error(f"the backend at {self._url} sent {exc}: refused; ask again", "server_error")

    def _fault(self, exc: openai.APIError) -> EngineError:
        """The error a user can act on, for what the client raised."""
        url, detail = self._url, redact(_server_message(exc), self._secrets, DETAIL_LIMIT)
        if isinstance(exc, openai.APITimeoutError):
            return self._error(
                f"the backend at {url} sent nothing for {self.config.timeout_s:g} s "
                f"({self.config.max_retries} retries): it may be overloaded; llamaLsp.backend.timeout "
                "sets how long to wait",
                "timeout",
            )
        if isinstance(exc, openai.APIConnectionError):
            return self._error(
                f"could not reach the backend at {url} ({redact(_cause(exc), self._secrets, DETAIL_LIMIT)}): "
                "is the server running, and is "
                "llamaLsp.backend.url right?",
                "unreachable",
            )
        if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
            fix = (
                f"check the key in the environment variable {self.config.api_key_env}"
                if self.config.api_key_env
                else "set llamaLsp.backend.apiKeyEnv to the name of an environment variable holding the key"
            )
            return self._error(
                f"the backend at {url} refused the request ({exc.status_code} {detail}): {fix}",
                "unauthorized",
            )
        if isinstance(exc, openai.NotFoundError):
            if self.config.model is None:  # it serves another model now: the next request asks for it
                model, self._model = self._model, None
                return self._error(
                    f"the backend at {url} no longer serves {model} (404 {detail}): ask again, and the "
                    "model it serves now answers",
                    "model_not_found",
                )
            return self._error(
                f"the backend at {url} has no model {self.config.model} (404 {detail}): set "
                "llamaLsp.backend.model to a model it serves",
                "model_not_found",
            )
        if isinstance(exc, openai.RateLimitError):
            return self._error(
                f"the backend at {url} is overloaded (429 {detail}, {self.config.max_retries} retries): "
                "try again in a moment",
                "overloaded",
            )
        if isinstance(exc, openai.APIStatusError) and exc.status_code < 500:
            kind = "context_overflow" if "context" in detail.lower() else "invalid_request"
            return self._error(
                f"the backend at {url} refused the request ({exc.status_code}): {detail}", kind
            )
        return self._error(
            f"the backend at {url} failed after {self.config.max_retries} retries: {detail}; ask again",
            "server_error",
        )


class _Answer:
    """One streamed answer as it arrives: its text (sent on as far as it cannot be a tool call yet),
    the tool calls assembled from their deltas, and the server's figures. Each delta costs time in
    proportion to its own length (nothing before it is read again, but by `keep_going` where the caller
    gives one), and the answer is cut once it has more tokens than asked for."""

    def __init__(
        self,
        request: ChatRequest,
        on_piece: Callable[[str], None],
        keep_going: Callable[[str], bool] | None = None,
    ):
        self._on_piece = on_piece
        self._keep_going = keep_going
        may_call = bool(request.tools) and request.tool_choice != "none"
        self._tool_names: list[str] = []
        if may_call:
            declared = [tool["function"]["name"] for tool in request.tools or []]
            self._tool_names = request.allowed_tools or declared
        self._call_start = CallStartTracker(self._tool_names) if self._tool_names else None
        self._max_tokens = request.max_tokens
        self._content: list[str] = []
        self._n_content = 0  # characters of content
        self._unsent: list[str] = []  # the content's end, not sent yet: it may begin a tool call
        self._n_sent = 0
        # Each delta that carries text is a token at least (servers stream one per token), and each
        # token is MAX_TOKEN_CHARS characters at most: the larger count is never more than was written.
        self._n_deltas = 0
        self._n_chars = 0  # of content and tool calls
        self._calls: dict[int, dict[str, str]] = {}
        self.finished = False
        self.cut = False  # past max_tokens: the rest is not read
        self.ended_early = False  # keep_going said so: the rest is not read
        self._finish_reason = "stop"
        self._first_token_s: float | None = None
        self._usage: dict[str, Any] = {}
        self._timings: dict[str, Any] = {}

    def add(self, chunk: dict[str, Any], elapsed_s: float) -> None:
        """One chunk of the stream (a chat.completion.chunk object); raises _Malformed if it is not."""
        usage, timings, choices = chunk.get("usage"), chunk.get("timings"), chunk.get("choices") or []
        self._usage = usage if isinstance(usage, dict) else self._usage
        self._timings = timings if isinstance(timings, dict) else self._timings  # llama-server's
        if not isinstance(choices, list) or not all(isinstance(choice, dict) for choice in choices):
            raise _Malformed("choices that are not objects")
        for choice in choices[:1]:
            delta = _field(choice, "delta", dict) or {}
            content = _field(delta, "content", str)
            calls = _field(delta, "tool_calls", list) or []
            if (content or calls) and self._first_token_s is None:
                self._first_token_s = elapsed_s
            for call in calls:
                self._add_call(call)
            if content:
                self._add_content(content)
            finish_reason = _field(choice, "finish_reason", str)
            if finish_reason is not None:
                self.finished = True
                self._finish_reason = finish_reason
        n_tokens = max(self._n_deltas, -(-self._n_chars // MAX_TOKEN_CHARS))
        if n_tokens > self._max_tokens:
            self.finished = self.cut = True
            self._finish_reason = "length"

    def _add_call(self, call: Any) -> None:
        if not isinstance(call, dict) or not isinstance(call.get("index", 0), int):
            raise _Malformed("a tool call that is not an object with an index")
        entry = self._calls.setdefault(call.get("index", 0), {"id": "", "name": "", "arguments": ""})
        entry["id"] = _field(call, "id", str) or entry["id"]
        function = _field(call, "function", dict) or {}
        name, arguments = _field(function, "name", str) or "", _field(function, "arguments", str) or ""
        entry["name"] += name
        entry["arguments"] += arguments
        self._n_deltas += 1
        self._n_chars += len(name) + len(arguments)

    def _add_content(self, content: str) -> None:
        self._content.append(content)
        self._unsent.append(content)
        self._n_content += len(content)
        self._n_deltas += 1
        self._n_chars += len(content)
        # Not what may be the start of a tool call written as JSON (the local engine's own rule).
        self._send(self._call_start.add(content) if self._call_start else self._n_content)
        if self._keep_going is not None and not self._keep_going("".join(self._content)):
            self.finished = self.ended_early = True
            self._finish_reason = "stop"

    def _send(self, upto: int) -> None:
        if upto > self._n_sent:
            unsent = "".join(self._unsent)
            self._on_piece(unsent[: upto - self._n_sent])
            self._unsent = [unsent[upto - self._n_sent :]]
            self._n_sent = upto

    def result(self, elapsed_s: float) -> ChatResult:
        calls = [
            ToolCall(entry["id"] or f"call_{index}", entry["name"], _arguments(entry["arguments"]))
            for index, entry in sorted(self._calls.items())
            if not self.cut  # a call cut off is no call
        ]
        content = "".join(self._content)
        if not calls and self._tool_names and not self.cut:
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
        n_prompt = _count(usage, "prompt_tokens")
        if n_prompt is None:
            n_prompt = (_count(timings, "prompt_n") or 0) + (_count(timings, "cache_n") or 0)
        n_reused = _count(_field(usage, "prompt_tokens_details", dict) or {}, "cached_tokens")
        if n_reused is None:
            n_reused = _count(timings, "cache_n")
        n_evaluated = _count(timings, "prompt_n")
        n_generated = _count(usage, "completion_tokens")
        if n_generated is None:
            n_generated = _count(timings, "predicted_n")
        prefill_ms, decode_ms = _count(timings, "prompt_ms"), _count(timings, "predicted_ms")
        return Stats(
            n_prompt=n_prompt,
            n_common=n_reused or 0,
            n_reused=n_reused,
            n_evaluated=n_evaluated if n_evaluated is not None else n_prompt - (n_reused or 0),
            n_generated=n_generated if n_generated is not None else self._n_deltas,
            # llama-server's, when it drafts (--spec-type, -md)
            n_drafted=_count(timings, "draft_n") or 0,
            n_accepted=_count(timings, "draft_n_accepted") or 0,
            t_prefill_ms=float(prefill_ms if prefill_ms is not None else first_token_s * 1000),
            t_first_token_ms=first_token_s * 1000,
            t_decode_ms=float(decode_ms if decode_ms is not None else (elapsed_s - first_token_s) * 1000),
        )


_FINISH_REASONS = {"stop": "stop", "length": "length", "tool_calls": "tool_calls"}


class _Refused(Exception):
    """The server sent what is not read: more than a limit allows, or a compressed body."""


class _ServerError(Exception):
    """The server reported an error inside the stream; the message is its own."""


class _Malformed(ValueError):
    """An event that is not a chat completion chunk."""


async def _bound_body(response: httpx2.Response) -> None:
    """Bounds the body of every response before any of it is read (an httpx response hook). An error's
    body is cut at ERROR_BODY_LIMIT (the client reads it whole, for its message); any other body past
    BODY_LIMIT is refused. A compressed body is refused too: the client asks for none, and a few
    kilobytes of gzip can inflate to gigabytes before any limit sees them."""
    encoding = response.headers.get("content-encoding", "identity").strip().lower()
    if encoding != "identity":
        raise _Refused(f"a compressed body (Content-Encoding: {encoding[:40]}) though asked for none")
    assert isinstance(response.stream, httpx2.AsyncByteStream)  # the client is async
    if response.is_error:
        response.stream = _BoundedBody(response.stream, ERROR_BODY_LIMIT, cut=True)
    else:
        response.stream = _BoundedBody(response.stream, BODY_LIMIT, cut=False)


class _BoundedBody(httpx2.AsyncByteStream):
    """A response body that ends after `limit` bytes (cut) or raises _Refused there."""

    def __init__(self, body: httpx2.AsyncByteStream, limit: int, cut: bool):
        self._body, self._limit, self._cut = body, limit, cut

    async def __aiter__(self) -> AsyncIterator[bytes]:
        left = self._limit
        async for chunk in self._body:
            if len(chunk) > left:
                if not self._cut:
                    raise _Refused(f"more than {self._limit >> 20} MiB")
                if left:
                    yield chunk[:left]
                return
            left -= len(chunk)
            yield chunk

    async def aclose(self) -> None:
        await self._body.aclose()


_LINE_END = re.compile(rb"\r\n|\r|\n")


async def _event_data(body: AsyncIterator[bytes]) -> AsyncGenerator[bytes, None]:
    """The data of each server-sent event in the body, in order; comments (keep-alives) and other
    fields are skipped. No line, and no event's data, is held past LINE_LIMIT bytes: _Refused."""
    pending = b""  # the line being received
    data: list[bytes] = []  # the event's data lines so far
    n_data = 0
    async for chunk in body:
        searched = max(len(pending) - 1, 0)  # only a "\r" may end pending: see below
        pending += chunk
        start = 0
        for line_end in _LINE_END.finditer(pending, searched):
            if line_end.group() == b"\r" and line_end.end() == len(pending):
                break  # maybe the first half of "\r\n"
            line = pending[start : line_end.start()]
            start = line_end.end()
            if not line:
                if data:
                    yield b"\n".join(data)
                data, n_data = [], 0
                continue
            field, _, value = line.partition(b":")
            if field == b"data":
                n_data += len(value)
                if n_data > LINE_LIMIT:
                    raise _Refused(f"an event of more than {LINE_LIMIT >> 20} MiB")
                data.append(value[1:] if value.startswith(b" ") else value)
        pending = pending[start:]
        if len(pending) > LINE_LIMIT:
            raise _Refused(f"a line of more than {LINE_LIMIT >> 20} MiB")


def _chunk(data: bytes) -> dict[str, Any]:
    """An event's data as a chunk object; raises _ServerError for an error the server reports."""
    chunk = json.loads(data)
    if not isinstance(chunk, dict):
        raise _Malformed("an event that is not a JSON object")
    error = chunk.get("error")
    if error:
        message = error.get("message") if isinstance(error, dict) else error
        raise _ServerError(str(message or "an error event"))
    return chunk


def _field(value: dict[str, Any], key: str, kind: type) -> Any:
    """value[key] if it is of the kind, None if absent or null; else _Malformed."""
    item = value.get(key)
    if item is not None and not isinstance(item, kind):
        raise _Malformed(f"{key} that is not a {kind.__name__}")
    return item


def _count(value: dict[str, Any], key: str) -> int | None:
    """A number the server reports (a count, milliseconds); None if it reports none."""
    item = value.get(key)
    if isinstance(item, bool) or not isinstance(item, int | float):
        return None
    return int(item)


def _arguments(text: str) -> dict[str, Any] | str:
    """A call's arguments as an object; text that is not one goes to the tool as it is, which says why."""
    try:
        value = json.loads(text) if text.strip() else {}
    except (ValueError, RecursionError):
        return text
    return value if isinstance(value, dict) else text


def _shown_model(model_id: str) -> str:
    """A model as messages name it: llama-server started with `-m FILE` and no alias lists the file's
    path, shown as the file's name; any other id (e.g. vLLM's Qwen/Qwen2.5-Coder-7B-Instruct) as it is."""
    if model_id.lower().endswith(".gguf"):
        return re.split(r"[\\/]", model_id)[-1]
    return model_id


def _server_message(exc: openai.APIError) -> str:
    """What the server said was wrong (its error object's message, or its error body's text), else
    the client's summary."""
    if isinstance(exc.body, str):  # not JSON, or cut at ERROR_BODY_LIMIT
        return exc.body or exc.message
    body = exc.body if isinstance(exc.body, dict) else {}
    error = body.get("error")
    message = error.get("message") if isinstance(error, dict) else body.get("message")
    return str(message) if message else exc.message


def _cause(exc: BaseException) -> str:
    """The innermost reason a connection failed (e.g. "Connection refused"), not the client's wrapper."""
    while exc.__cause__ is not None or exc.__context__ is not None:
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    return str(exc) or type(exc).__name__
