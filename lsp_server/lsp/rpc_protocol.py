"""The protocol under pygls's handlers: every request answered once, and cancellations that reach handlers.

HardenedProtocol takes what the FrameParser reads, checks each envelope and hands pygls only what it can
serve; its overrides answer what pygls drops (params that do not structure, requests after shutdown) and
cancel what pygls leaves running (the command behind a workspace/executeCommand), without tracebacks
in answers. This module and rpc_client are the only ones that touch pygls's private names: the rest of
the server goes through replace_workspace and shutdown_received. docs/upstream-pygls.md says what each
override changes and why; pyproject.toml pins pygls to the minor version they were written against.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import json
import logging
import threading
import traceback
import uuid
from collections.abc import Generator
from concurrent.futures import Future
from functools import partial
from typing import Any

import cattrs
from lsprotocol import types
from pygls.exceptions import FeatureRequestError, JsonRpcException, JsonRpcRequestCancelled
from pygls.protocol import JsonRPCNotification, JsonRPCRequestMessage, JsonRPCResponseMessage
from pygls.protocol.language_server import LanguageServerProtocol, lsp_method
from pygls.workspace import Workspace

from .rpc_envelope import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    REQUEST_CANCELLED,
    MsgId,
    Notification,
    Rejection,
    Request,
    Response,
    check_batch,
    check_envelope,
    is_valid_id,
)
from .rpc_framing import Frame, FrameError

log = logging.getLogger("llama_lsp.rpc")


def replace_workspace(protocol: LanguageServerProtocol, workspace: Workspace) -> None:
    """Puts `workspace` in place of the one pygls built at initialize (pygls offers no setter)."""
    protocol._workspace = workspace


def shutdown_received(protocol: LanguageServerProtocol) -> bool:
    """Whether the client has sent `shutdown`: LSP's exit code is 0 after it and 1 otherwise."""
    return protocol._shutdown


def _structure_error(exc: Exception) -> str:
    if isinstance(exc, cattrs.BaseValidationError):
        detail = "; ".join(cattrs.transform_error(exc, path="params")[:5])
    else:
        detail = str(exc) or type(exc).__name__
    return detail[:1000]


class HardenedProtocol(LanguageServerProtocol):
    """pygls's LanguageServerProtocol that answers every request once and cancels what it is asked to.

    Takes parsed JSON through handle_frame (serve_stdio's loop calls it), checks the envelope, and
    structures only the top-level message. Beyond that, relative to pygls:
    - a second initialize is answered InvalidRequest and changes nothing (pygls would start afresh);
    - a request after shutdown is answered InvalidRequest, and shutdown cancels only the client's
      requests in flight (pygls also cancelled the handler of an `exit` sent before shutdown's answer);
    - a $/cancelRequest for a generator-run builtin (workspace/executeCommand) cancels the handler it
      runs too, and a generator whose handler ends cancelled is answered RequestCancelled; one whose id
      is neither an integer nor a string is ignored (pygls raised on a list);
    - internal errors are answered without their traceback (it is logged instead);
    - a result that cannot be serialized is answered with an internal error instead of nothing.
    """

    def __init__(self, server: Any, converter: cattrs.Converter) -> None:
        super().__init__(server, converter)
        self._generator_steps: dict[Future[Any], Future[Any]] = {}  # request future -> step running
        self._client_requests: set[MsgId] = set()  # ids of the client's requests not answered yet
        self._write_lock = threading.Lock()  # thread handlers' answers must not interleave with others
        self._transport_closed = False
        self._initialize_received = False  # initialize is answered once; a second one is refused

    # ---- incoming --------------------------------------------------------------------------------

    def handle_frame(self, event: Frame | FrameError) -> None:
        """Handles one event of the FrameParser; nothing a client sends raises out of here."""
        if isinstance(event, FrameError):
            log.warning("framing: %s", event.message)
            self.send_error(None, event.code, event.message)
            return
        try:
            self.handle_json(event.value)
        except Exception as exc:
            log.exception("could not handle a message")
            value = event.value
            if isinstance(value, dict) and "method" in value and is_valid_id(value.get("id")):
                self.send_error(value["id"], INTERNAL_ERROR, f"llama-lsp could not handle the message: {exc}")

    def handle_json(self, value: Any) -> None:
        if isinstance(value, list):
            for rejection in check_batch(value):
                self._reject(rejection)
            return
        envelope = check_envelope(value)
        if isinstance(envelope, Rejection):
            self._reject(envelope)
        elif isinstance(envelope, Response):
            self._receive_response(envelope)
        elif self._shutdown and isinstance(envelope, Request):
            self.send_error(
                envelope.id, INVALID_REQUEST, f"the server is shut down: {envelope.method} refused"
            )
        elif self._shutdown and envelope.method != types.EXIT:
            log.debug("ignoring %s after shutdown", envelope.method)
        else:
            self._dispatch(envelope)

    def _reject(self, rejection: Rejection) -> None:
        log.warning("rejected a message (id %r): %s", rejection.id, rejection.message)
        if rejection.answer:
            self.send_error(rejection.id, rejection.code, rejection.message)

    def _dispatch(self, envelope: Request | Notification) -> None:
        is_request = isinstance(envelope, Request)
        default_type = JsonRPCRequestMessage if is_request else JsonRPCNotification
        message_type = self.get_message_type(envelope.method) or default_type
        try:
            message = self._converter.structure(envelope.message, message_type)
        except Exception as exc:
            detail = _structure_error(exc)
            if isinstance(envelope, Request):
                log.warning("invalid params for %s (id %r): %s", envelope.method, envelope.id, detail)
                self.send_error(
                    envelope.id, INVALID_PARAMS, f"invalid params for {envelope.method}: {detail}"
                )
            else:
                log.warning("ignoring a %s notification with invalid params: %s", envelope.method, detail)
            return
        log.debug("%s %s", "request" if is_request else "notification", envelope.method)
        if envelope.method == types.INITIALIZE and self._initialize_received:
            # pygls would build a new workspace, dropping every open document, and merge new settings.
            log.warning("refused a second initialize")
            if isinstance(envelope, Request):
                self.send_error(envelope.id, INVALID_REQUEST, "the server is already initialized")
            return
        self._initialize_received |= envelope.method == types.INITIALIZE
        context = contextvars.copy_context()  # each handler in its own context, as pygls does
        if isinstance(envelope, Request):
            if envelope.method == types.SHUTDOWN:
                # From here on requests are refused, and `exit`, even before shutdown's answer, exits 0.
                self._shutdown = True
            self._client_requests.add(envelope.id)
            context.run(self._handle_request, envelope.id, envelope.method, message.params)
        else:
            context.run(self._handle_notification, envelope.method, message.params)

    def _receive_response(self, response: Response) -> None:
        if response.id not in self._result_types:
            log.warning("ignoring a response with id %r: no request of ours has that id", response.id)
            return
        result_type = self._result_types.pop(response.id) or JsonRPCResponseMessage
        if response.error is not None:
            error = types.ResponseError(
                code=response.error["code"],
                message=response.error["message"],
                data=response.error.get("data"),
            )
            self._handle_response(response.id, None, error)
            return
        try:
            message = self._converter.structure(
                {"jsonrpc": "2.0", "id": response.id, "result": response.result}, result_type
            )
        except Exception as exc:
            detail = _structure_error(exc)
            log.warning("malformed result for our request %r: %s", response.id, detail)
            error = types.ResponseError(code=INTERNAL_ERROR, message=f"malformed result: {detail}")
            self._handle_response(response.id, None, error)
            return
        self._handle_response(response.id, message.result)

    # ---- lifecycle and cancellation --------------------------------------------------------------

    @lsp_method(types.SHUTDOWN)
    def lsp_shutdown(self, *args: Any) -> Generator[Any, Any, None]:
        """Cancels the client's requests still in flight (pygls cancels every future it knows, the
        handler of an `exit` that arrived meanwhile included, so that the process never ends)."""
        if (user_handler := self.fm.features.get(types.SHUTDOWN)) is not None:
            yield user_handler, args, None
        current_id = self.msg_id
        for msg_id in list(self._client_requests):
            future = self._request_futures.get(msg_id)
            if msg_id != current_id and future is not None and not future.done():
                step = self._generator_steps.pop(future, None)
                future.cancel()
                if step is not None:
                    step.cancel()
        self._shutdown = True
        return None

    def _execute_handler(
        self,
        msg_id: MsgId,
        handler: Any,
        callback: Any,
        args: tuple[Any, ...] | None = None,
        kwargs: dict[str, Any] | None = None,
    ) -> None:
        before = self._request_futures.get(msg_id)
        super()._execute_handler(msg_id, handler, callback, args, kwargs)
        future = self._request_futures.get(msg_id)
        if future is not None and future is not before:
            # pygls forgets only the futures of client requests; those of notifications and of generator
            # steps would otherwise stay in _request_futures for good.
            future.add_done_callback(partial(self._forget_future, msg_id))

    def _forget_future(self, msg_id: MsgId, future: Future[Any]) -> None:
        if self._request_futures.get(msg_id) is future:
            del self._request_futures[msg_id]

    def _run_generator(
        self, future: Future[Any] | None, *, gen: Generator[Any, Any, Any], result_future: Future[Any]
    ) -> None:
        """pygls's generator stepping, remembering each step's future so that a cancel reaches it."""
        self._generator_steps.pop(result_future, None)
        if result_future.cancelled():
            gen.close()
            return
        try:
            value = future.result() if future is not None else None
            handler, args, kwargs = gen.send(value)
        except StopIteration as stop:
            result_future.set_result(stop.value)
            return
        except (asyncio.CancelledError, concurrent.futures.CancelledError):
            gen.close()
            result_future.set_exception(JsonRpcRequestCancelled("the request was cancelled"))
            return
        except Exception as exc:
            result_future.set_exception(exc)
            return
        step_id = str(uuid.uuid4())
        try:
            self._execute_handler(
                step_id,
                handler,
                args=args,
                kwargs=kwargs,
                callback=partial(self._run_generator, gen=gen, result_future=result_future),
            )
        except Exception as exc:  # from a step's callback, nothing above would answer the request
            gen.close()
            result_future.set_exception(exc)
            return
        step = self._request_futures.get(step_id)
        if step is not None and not step.done():
            self._generator_steps[result_future] = step

    def _handle_cancel_notification(self, msg_id: MsgId) -> None:
        if not is_valid_id(msg_id):  # no request has such an id: ignored, as LSP says of unknown ids
            log.warning("ignoring a $/cancelRequest whose id is not an integer or a string: %.100r", msg_id)
            return
        request = self._request_futures.get(msg_id)
        super()._handle_cancel_notification(msg_id)
        step = self._generator_steps.pop(request, None) if request is not None else None
        if step is not None and step.cancel():
            log.info("cancelled the handler that request %r was running", msg_id)

    # ---- outgoing --------------------------------------------------------------------------------

    def send_error(self, msg_id: MsgId | None, code: int, message: str) -> None:
        if msg_id is not None:
            self._client_requests.discard(msg_id)
        self._send_data({"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}})

    def _send_handler_result(self, future: Future[Any], *, msg_id: MsgId) -> None:
        self._request_futures.pop(msg_id, None)
        if future.cancelled():
            self.send_error(msg_id, REQUEST_CANCELLED, f"request {msg_id!r} was cancelled")
            return
        exc = future.exception()
        if exc is None:
            self._send_response(msg_id, result=future.result())
            return
        if isinstance(exc, JsonRpcException):
            log.info("request %r answered with error %d: %s", msg_id, exc.code, exc.message)
            self._send_response(msg_id, error=exc.to_response_error())
        else:
            log.error("request %r failed", msg_id, exc_info=exc)
            message = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            self._send_response(msg_id, error=types.ResponseError(code=INTERNAL_ERROR, message=message))
        if isinstance(exc, Exception):
            self._server._report_server_error(exc, FeatureRequestError)

    def _check_handler_result(self, future: Future[Any]) -> None:
        if not future.cancelled() and isinstance(future.exception(), JsonRpcRequestCancelled):
            return  # a notification's handler cancelled by shutdown: nothing went wrong
        super()._check_handler_result(future)

    def _send_response(
        self, msg_id: MsgId, result: Any | None = None, error: types.ResponseError | None = None
    ) -> None:
        self._client_requests.discard(msg_id)
        if error is not None and error.code == INTERNAL_ERROR and isinstance(error.data, dict):
            trace = error.data.get("traceback")
            if trace is not None:
                # A traceback helps whoever reads the server's log, not the client's user.
                log.warning("internal error answering request %r: %s", msg_id, error.message)
                log.debug("its traceback:\n%s", "".join(trace) if isinstance(trace, list) else trace)
                data = {k: v for k, v in error.data.items() if k != "traceback"} or None
                error = types.ResponseError(code=error.code, message=error.message, data=data)
        super()._send_response(msg_id, result, error)

    def _send_data(self, data: Any) -> None:
        """pygls's _send_data, except that it logs nothing at INFO and a message that cannot be
        serialized still answers its request, and writes are serialized across threads."""
        if not data:
            return
        try:
            body = json.dumps(data, default=self._serialize_message)
        except Exception as exc:
            log.exception("could not serialize an outgoing message")
            msg_id = data.get("id") if isinstance(data, dict) else getattr(data, "id", None)
            is_answer = not (isinstance(data, dict) and "method" in data) and not hasattr(data, "method")
            if not (is_answer and is_valid_id(msg_id)):
                return
            error = {"code": INTERNAL_ERROR, "message": f"llama-lsp could not serialize its answer: {exc}"}
            body = json.dumps({"jsonrpc": "2.0", "id": msg_id, "error": error})
        payload = body.encode("utf-8")
        if self._include_headers:
            payload = b"Content-Length: %d\r\n\r\n%s" % (len(payload), payload)
        with self._write_lock:
            if self.writer is None or self._transport_closed:
                log.debug("not sent (no transport): %.200s", body)
                return
            try:
                # Synchronous writers only (serve_stdio's): an awaitable write could reorder messages.
                self.writer.write(payload)
            except (OSError, ValueError) as exc:  # a closed pipe or file: the client has gone
                self._transport_closed = True
                log.warning("cannot write to the client any more (%s)", exc)
