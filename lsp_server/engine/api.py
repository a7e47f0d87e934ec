"""The engine interface: what the layers above ask of an engine, and the types they exchange.

Two engines implement it: the in-process one (local: llama.cpp through the native shim) and a remote
one (remote: an OpenAI-compatible server such as llama-server or vLLM). The turn loop, warming and the
server talk to `ChatEngine` only, and never know which one they have.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol
from urllib.parse import unquote, urlsplit, urlunsplit

# EngineError kinds that mean the remote backend is at fault, not the request.
BACKEND_FAULTS = frozenset(
    {
        "unreachable",
        "unauthorized",
        "model_not_found",
        "overloaded",
        "server_error",
        "stream_broken",
        "timeout",
    }
)


# The longest message shown anywhere (an error, a log line, the status), in bytes of UTF-8; an engine's
# own messages leave room for what the layers above add to them ("llama-lsp: ...").
MESSAGE_LIMIT = 4096
ENGINE_MESSAGE_LIMIT = MESSAGE_LIMIT - 1024


def redact(text: str, secrets: Iterable[str], limit: int = ENGINE_MESSAGE_LIMIT) -> str:
    """text as it may be shown: every secret in it replaced by ***, then cut to `limit` bytes. The one
    way a remote server's text, or its URL, reaches a message."""
    for secret in sorted(filter(None, secrets), key=len, reverse=True):  # "user:pass" before "pass"
        text = text.replace(secret, "***")
    if len(text) <= limit // 4:  # short enough in any encoding
        return text
    encoded = text[: limit + 1].encode("utf-8", "surrogatepass")
    if len(encoded) <= limit:
        return text
    mark = " [cut]"
    return encoded[: limit - len(mark)].decode("utf-8", "ignore") + mark


SECONDS_PER_TOKEN = 1.0  # a remote request's deadline gives the server this long per token it may write


@dataclass(frozen=True)
class RemoteConfig:
    """Where the remote engine (engine/remote/) finds its server; here so that settings can hold one without
    importing the `openai` package."""

    url: str  # the API's base URL, e.g. http://host:8080/v1; it may hold credentials (user:password@)
    model: str | None = None  # None: the one model the server serves (the remote engine finds it)
    api_key_env: str | None = None  # the environment variable that holds the key; the key is never stored
    timeout_s: float = 600.0  # the longest wait for the server's next bytes (the first: the prompt is read)
    connect_timeout_s: float = 10.0
    max_retries: int = 2

    def api_key(self) -> str | None:
        """The key, read from the environment now (never kept in settings)."""
        if not self.api_key_env:
            return None
        return os.environ.get(self.api_key_env) or None

    def split_url(self) -> tuple[str, str]:
        """The URL without its `user:password@`, and that userinfo as written ("" when it has none)."""
        parts = urlsplit(self.url)
        userinfo, _, host = parts.netloc.rpartition("@")
        return (urlunsplit(parts._replace(netloc=host)) if userinfo else self.url), userinfo

    def login(self) -> tuple[str, str] | None:
        """The URL's user and password, decoded: what is sent as basic auth; None when it has none."""
        userinfo = self.split_url()[1]
        if not userinfo:
            return None
        user, _, password = userinfo.partition(":")
        return unquote(user), unquote(password)

    def secrets(self) -> list[str]:
        """What no message may show: the key, and the URL's credentials (as written, decoded, and as the
        token of the basic auth they are sent as)."""
        userinfo, login = self.split_url()[1], self.login()
        if login is None:
            return [self.api_key() or ""]
        basic = base64.b64encode(":".join(login).encode()).decode()
        password = userinfo.partition(":")[2]
        return [self.api_key() or "", userinfo, password, unquote(userinfo), login[1], basic]

    def deadline_s(self, max_tokens: int) -> float:
        """The longest a request may take, retries included, whatever the server does: `timeout_s` for
        it to read the prompt, then SECONDS_PER_TOKEN for each token it may write."""
        return self.timeout_s + max_tokens * SECONDS_PER_TOKEN

    @property
    def shown_url(self) -> str:
        """The URL as messages show it: credentials replaced by ***."""
        return redact(self.url, self.secrets())


@dataclass
class Stats:
    n_prompt: int = 0
    n_common: int = 0  # tokens of the prompt the cache held
    n_reused: int | None = 0  # tokens kept without evaluation (n_common cut to a chunk boundary);
    # None: unknown (a remote backend that reports no cached tokens)
    n_evaluated: int = 0
    n_generated: int = 0
    n_drafted: int = 0  # tokens drafted for speculative decoding (engine/drafts: the prompt's own n-grams)
    n_accepted: int = 0  # drafted tokens the model agreed with, so written without a decode step each
    t_match_ms: float = 0.0
    t_prefill_ms: float = 0.0
    t_first_token_ms: float = 0.0
    t_decode_ms: float = 0.0
    slot: int = -1

    @classmethod
    def from_native(cls, data: dict[str, Any]) -> Stats:
        known = cls.__dataclass_fields__
        return cls(**{k: v for k, v in data.items() if k in known})


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any] | str


@dataclass
class ChatRequest:
    messages: list[dict[str, Any]] = field(default_factory=list)
    tools: list[dict[str, Any]] | None = None
    tool_choice: str = "auto"  # auto | required | none
    allowed_tools: list[str] | None = None  # callable subset; all `tools` stay declared in the prompt
    parallel_tool_calls: bool = False
    max_tokens: int = 512
    temperature: float = 0.0  # 0 is greedy
    top_k: int = 40
    top_p: float = 0.95
    seed: int = 0
    stop: list[str] = field(default_factory=list)
    slot: str | None = None  # the conversation this request continues
    prompt: str | None = None  # a raw prompt instead of messages (benchmarks, models without a template)
    warm: bool = False  # only read the messages into the slot's cache (no generation prompt, no answer)
    background: bool = False  # may not evict a conversation's slot (set by Engine.submit)
    speculative: bool | None = None  # draft from the request's own tokens; None: the engine's setting
    # The last message is the start of the assistant's answer, which the model continues; the result's
    # content is the whole answer, that start included.
    continue_answer: bool = False

    def to_native(self) -> dict[str, Any]:
        data = {k: v for k, v in asdict(self).items() if v is not None}
        if self.prompt is not None:
            data.pop("messages", None)
        if not self.tools:
            data.pop("tools", None)
        return data


@dataclass
class InfillRequest:
    """Fill in the middle at the cursor (inline completion), in the engine's completion slot.

    The prompt is laid out stable-first (llama_lsp.h, "fim"): other files, then the lines above the
    cursor, then the cursor's line up to it, then what follows it; so consecutive keystrokes share
    everything up to the line being typed.
    """

    prefix: str  # the lines above the cursor's line, each with its line ending
    prompt: str  # the cursor's line up to the cursor
    suffix: str  # the rest of that line and a few lines below
    filename: str = ""
    repo: str = ""
    extra: list[tuple[str, str]] = field(default_factory=list)  # (filename, text) of other files
    max_tokens: int = 64
    warm: bool = False  # only read the prompt into the completion slot (what typing will start from)

    def to_native(self) -> dict[str, Any]:
        fim = {
            "prefix": self.prefix,
            "prompt": self.prompt,
            "suffix": self.suffix,
            "filename": self.filename,
            "repo": self.repo,
            "extra": [{"filename": name, "text": text} for name, text in self.extra],
        }
        request = {"fim": fim, "max_tokens": self.max_tokens, "temperature": 0}
        return {**request, "warm": True, "background": True} if self.warm else request


@dataclass
class ChatResult:
    content: str
    tool_calls: list[ToolCall]
    finish_reason: str  # stop | length | tool_calls | cancelled | error
    tokens: list[int]
    stats: Stats
    error_message: str | None = None

    @classmethod
    def from_native(cls, data: dict[str, Any]) -> ChatResult:
        return cls(
            content=data.get("content", ""),
            tool_calls=[ToolCall(**call) for call in data.get("tool_calls", [])],
            finish_reason=data.get("finish_reason", "stop"),
            tokens=list(data.get("tokens", [])),
            stats=Stats.from_native(data.get("stats", {})),
            error_message=data.get("error_message"),
        )

    @classmethod
    def cancelled_before_start(cls) -> ChatResult:
        return cls(content="", tool_calls=[], finish_reason="cancelled", tokens=[], stats=Stats())


class EngineError(Exception):
    """The engine could not load or serve a request; the message says why.

    The engine's own error type, so that nothing above it needs the native layer's. `kind` is the
    native error's machine-readable type (llama_lsp.h), e.g. "model_load" or "context_overflow".
    """

    def __init__(self, message: str, kind: str = "internal"):
        super().__init__(message)
        self.kind = kind

    @property
    def backend_fault(self) -> bool:
        """The remote backend failed (unreachable, refused the key, ...): the status should say so."""
        return self.kind in BACKEND_FAULTS


class EngineClosed(EngineError):
    def __init__(self, message: str = "the engine is shut down"):
        super().__init__(message, "closed")


class WarmJob(Protocol):
    async def wait(self) -> Any: ...

    def cancel(self) -> None: ...


class ChatEngine(Protocol):
    """An engine that answers chat requests; the local and the remote engine implement it."""

    @property
    def can_warm(self) -> bool:
        """Whether warm() reads prompts into a cache this process controls."""

    @property
    def can_complete(self) -> bool:
        """Whether complete() fills in the middle (the model has FIM tokens, and the engine a slot)."""

    @property
    def queue_length(self) -> int:
        """Requests waiting or running (background work and completions not counted)."""

    async def ready(self) -> dict[str, Any]:
        """Waits until the engine can answer; returns its info, or raises EngineError."""

    async def generate(
        self,
        request: ChatRequest,
        on_piece: Callable[[str], None] | None = None,
        keep_going: Callable[[str], bool] | None = None,
    ) -> ChatResult:
        """Answers the request, streaming the answer's text to on_piece. Cancelling the awaiting task
        stops the answer. `keep_going` sees the answer's text so far after each piece and may end it
        early by returning False (finish_reason "stop", the text kept, as far as it went)."""

    async def complete(
        self, request: InfillRequest, keep_going: Callable[[str], bool] | None = None
    ) -> ChatResult:
        """Fills in the middle at the cursor. It yields to chat: a chat request that arrives stops
        it (finish_reason "cancelled"). `keep_going` sees the text so far after each piece and may
        end it early by returning False (finish_reason "cancelled", the text kept)."""

    async def suggest(
        self, request: ChatRequest, keep_going: Callable[[str], bool] | None = None
    ) -> ChatResult:
        """Answers a request the user did not ask for (a next-edit suggestion) as a completion runs: it
        yields to chat, which stops it (finish_reason "cancelled"). Cancelling the awaiting task stops it.
        `keep_going` sees the answer so far after each piece and may end it early (finish_reason "stop")."""

    async def render(self, request: ChatRequest) -> str | None:
        """The prompt the model's chat template makes of the request's messages and tools; None where
        the backend cannot say. Runs nothing."""

    def warm(self, request: ChatRequest, follow_up: bool = False) -> WarmJob:
        """Reads the request's messages into its slot in the background (only where can_warm). A
        follow-up's (a conversation with its latest answer) goes before other warming."""

    def warm_completion(self, request: InfillRequest) -> WarmJob:
        """Reads a completion's prompt into the completion slot in the background (where can_complete)."""

    async def info(self) -> dict[str, Any]:
        """What the engine is and holds: its model, and `slots` (key, n_tokens) where it has them."""

    async def aclose(self) -> None:
        """Stops what runs and frees what the engine holds. Idempotent."""
