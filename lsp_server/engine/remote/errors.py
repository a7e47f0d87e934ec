"""What can go wrong with a remote backend, and the EngineError a user is told: its kind one of
api.BACKEND_FAULTS, its message naming the fix.

The exceptions here are raised below the engine (limits, sse, stream) and never leave it: the engine
turns each into an EngineError with Faults. Every message that shows the server's words or its URL goes
through api.redact: no key, no credentials, cut short, and the server's own words cut at DETAIL_LIMIT.
"""

from __future__ import annotations

import httpx2
import openai

from ..api import EngineError, RemoteConfig, redact

DETAIL_LIMIT = 1024  # bytes of the server's own words in a message


class Refused(Exception):
    """The server sent what is not read: more than a limit allows, or a compressed body."""


class ServerError(Exception):
    """The server reported an error inside the stream; the message is its own."""


class Malformed(ValueError):
    """An event that is not a chat completion chunk."""


class Faults:
    """The EngineErrors of one backend: its URL shown, its secrets never."""

    def __init__(self, config: RemoteConfig):
        self.config = config
        self._secrets = config.secrets()
        self._url = config.shown_url

    def quote(self, text: str) -> str:
        """The server's words as a message may show them: redacted, at most DETAIL_LIMIT."""
        return redact(text, self._secrets, DETAIL_LIMIT)

    def error(self, message: str, kind: str) -> EngineError:
        """An EngineError whose message may show the server's words: redacted and cut."""
        return EngineError(redact(message, self._secrets), kind)

    def refused(self, exc: Refused) -> EngineError:
        return self.error(f"the backend at {self._url} sent {exc}: refused; ask again", "server_error")

    def midway(self, exc: Exception) -> EngineError:
        """The error for what ended an answer's stream after the server accepted the request."""
        if isinstance(exc, Refused):
            return self.refused(exc)
        if isinstance(exc, ServerError):
            return self.error(
                f"the backend at {self._url} failed midway through the answer: {self.quote(str(exc))}; "
                "ask again",
                "server_error",
            )
        if isinstance(exc, httpx2.TimeoutException):
            return self.error(
                f"the backend at {self._url} sent nothing for {self.config.timeout_s:g} s midway "
                "through the answer: it may be overloaded; llamaLsp.backend.timeout sets how long to "
                "wait",
                "timeout",
            )
        if isinstance(exc, ValueError):  # not JSON, or not a chunk
            return self.error(
                f"the backend's answer broke off midway (an unreadable event: {self.quote(str(exc))}); "
                "ask again",
                "stream_broken",
            )
        return self.error(  # the connection dropped
            f"the backend's answer broke off midway ({type(exc).__name__}: {self.quote(str(exc))}); "
            "ask again",
            "stream_broken",
        )

    def fault(self, exc: openai.APIError, model: str | None) -> EngineError:
        """The error a user can act on, for what the client raised on a request for `model`."""
        url, detail = self._url, self.quote(_server_message(exc))
        if isinstance(exc, openai.APITimeoutError):
            return self.error(
                f"the backend at {url} sent nothing for {self.config.timeout_s:g} s "
                f"({self.config.max_retries} retries): it may be overloaded; llamaLsp.backend.timeout "
                "sets how long to wait",
                "timeout",
            )
        if isinstance(exc, openai.APIConnectionError):
            return self.error(
                f"could not reach the backend at {url} ({self.quote(_cause(exc))}): "
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
            return self.error(
                f"the backend at {url} refused the request ({exc.status_code} {detail}): {fix}",
                "unauthorized",
            )
        if isinstance(exc, openai.NotFoundError):
            if self.config.model is None:  # it serves another model now: the next request asks for it
                return self.error(
                    f"the backend at {url} no longer serves {model} (404 {detail}): ask again, and the "
                    "model it serves now answers",
                    "model_not_found",
                )
            return self.error(
                f"the backend at {url} has no model {self.config.model} (404 {detail}): set "
                "llamaLsp.backend.model to a model it serves",
                "model_not_found",
            )
        if isinstance(exc, openai.RateLimitError):
            return self.error(
                f"the backend at {url} is overloaded (429 {detail}, {self.config.max_retries} retries): "
                "try again in a moment",
                "overloaded",
            )
        if isinstance(exc, openai.APIStatusError) and exc.status_code < 500:
            kind = "context_overflow" if "context" in detail.lower() else "invalid_request"
            return self.error(f"the backend at {url} refused the request ({exc.status_code}): {detail}", kind)
        return self.error(
            f"the backend at {url} failed after {self.config.max_retries} retries: {detail}; ask again",
            "server_error",
        )


def _server_message(exc: openai.APIError) -> str:
    """What the server said was wrong (its error object's message, or its error body's text), else
    the client's summary."""
    if isinstance(exc.body, str):  # not JSON, or cut at limits.ERROR_BODY_LIMIT
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
