"""JSON-RPC 2.0 envelopes: the error codes, and what a parsed message is (sans-IO, no pygls).

check_envelope classifies one parsed message as a Request, Notification or Response, or says why it
cannot be served (a Rejection): anything malformed that carries an id gets an error answer with that
id, and id null where the id cannot be known. check_batch answers batches, which LSP does not have.
LSP_REQUESTS and LSP_NOTIFICATIONS, from lsprotocol, tell a request sent without an id from a
notification sent with one.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import attrs
from lsprotocol import types

log = logging.getLogger("llama_lsp.rpc")

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
REQUEST_CANCELLED = -32800

MsgId = int | str


def _lsp_methods_by_kind() -> tuple[frozenset[str], frozenset[str]]:
    """lsprotocol's requests and notifications: a request's message type is the one with an id."""
    requests: set[str] = set()
    notifications: set[str] = set()
    for method, (message_type, *_rest) in types.METHOD_TO_TYPES.items():
        has_id = attrs.has(message_type) and "id" in attrs.fields_dict(message_type)
        (requests if has_id else notifications).add(method)
    return frozenset(requests), frozenset(notifications)


LSP_REQUESTS, LSP_NOTIFICATIONS = _lsp_methods_by_kind()


@dataclass(frozen=True)
class Request:
    id: MsgId
    method: str
    message: dict[str, Any]  # the envelope with only JSON-RPC's fields, for pygls to structure


@dataclass(frozen=True)
class Notification:
    method: str
    message: dict[str, Any]


@dataclass(frozen=True)
class Response:
    id: MsgId
    result: Any
    error: dict[str, Any] | None  # {code, message, data?}, well-formed (a malformed one is replaced)


@dataclass(frozen=True)
class Rejection:
    """A message that cannot be served. `answer` is False where JSON-RPC forbids answering it."""

    id: MsgId | None
    code: int
    message: str
    answer: bool = True


Envelope = Request | Notification | Response | Rejection

_REQUEST_FIELDS = ("jsonrpc", "id", "method", "params")


def is_valid_id(value: Any) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool)) or isinstance(value, str)


def _json_type(value: Any) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number")


def check_envelope(value: Any) -> Envelope:
    """Classifies one parsed message, or says why it cannot be served (JSON-RPC 2.0, LSP's methods).

    Liberal where it is harmless: unknown top-level fields are dropped, not refused.
    """
    if not isinstance(value, dict):
        return Rejection(None, INVALID_REQUEST, f"a message must be a JSON object, not {_json_type(value)}")
    has_id = "id" in value
    answer_id = value["id"] if has_id and is_valid_id(value["id"]) else None
    if "method" in value:
        return _check_call(value, has_id, answer_id)
    if "result" in value or "error" in value:
        return _check_response(value, answer_id)
    if answer_id is not None:
        return Rejection(
            answer_id, INVALID_REQUEST, "a message with an id needs a method, or a result or an error"
        )
    return Rejection(None, INVALID_REQUEST, "not a request, a notification or a response")


def _check_call(value: dict[str, Any], has_id: bool, answer_id: MsgId | None) -> Envelope:
    method = value["method"]
    if has_id and answer_id is None:
        return Rejection(None, INVALID_REQUEST, "id must be an integer or a string")
    if value.get("jsonrpc") != "2.0":
        return Rejection(answer_id, INVALID_REQUEST, 'jsonrpc must be "2.0"')
    if not isinstance(method, str) or not method:
        return Rejection(answer_id, INVALID_REQUEST, "method must be a non-empty string")
    extra = set(value) - set(_REQUEST_FIELDS)
    if extra:
        log.debug("ignoring unknown fields %s of a %s message", sorted(extra), method)
    params = value.get("params")
    if params is not None and not isinstance(params, dict | list):
        return Rejection(
            answer_id,
            INVALID_PARAMS,
            f"params of {method} must be an object or an array, not {_json_type(params)}",
            answer=has_id,
        )
    message = {field: value[field] for field in _REQUEST_FIELDS if field in value}
    if answer_id is None:
        if method in LSP_REQUESTS:
            return Rejection(None, INVALID_REQUEST, f"{method} is a request: it needs an id")
        return Notification(method, message)
    if method in LSP_NOTIFICATIONS:
        return Rejection(answer_id, INVALID_REQUEST, f"{method} is a notification: send it without an id")
    return Request(answer_id, method, message)


def _check_response(value: dict[str, Any], answer_id: MsgId | None) -> Envelope:
    # Never answered: an answer to an answer would start a loop between two confused peers.
    if answer_id is None:
        return Rejection(None, INVALID_REQUEST, "a response without a valid id", answer=False)
    if value.get("jsonrpc") != "2.0":
        return Rejection(answer_id, INVALID_REQUEST, 'a response whose jsonrpc is not "2.0"', answer=False)
    if "error" not in value:
        return Response(answer_id, value["result"], None)
    error = value["error"]
    well_formed = (
        isinstance(error, dict)
        and isinstance(error.get("code"), int)
        and not isinstance(error.get("code"), bool)
        and isinstance(error.get("message"), str)
    )
    if not well_formed or "result" in value:
        # Still a failure for whoever waits on it, rather than a wait that never ends.
        error = {
            "code": INTERNAL_ERROR,
            "message": f"the client sent a malformed error response: {error!r:.200}",
        }
    return Response(answer_id, None, error)


def check_batch(values: list[Any]) -> list[Rejection]:
    """LSP has no batches: each request in one gets InvalidRequest; one id-null error if none is there."""
    rejections = [
        Rejection(item["id"], INVALID_REQUEST, "LSP has no batches: send each message on its own")
        for item in values
        if isinstance(item, dict)
        and is_valid_id(item.get("id"))
        and "result" not in item
        and "error" not in item
    ]
    if not rejections:
        what = "an empty batch" if not values else "a batch (LSP has no batches)"
        rejections.append(Rejection(None, INVALID_REQUEST, f"{what} is not a message"))
    return rejections
