"""LSP types to and from plain JSON, in one place: lsprotocol's own converter.

Our custom methods carry plain JSON (lsp_server.lsp.protocol); where one of them holds an LSP type (a
WorkspaceEdit in a chat result, a Range in a code action's data), it goes through here.
"""

from __future__ import annotations

from typing import Any, TypeVar

from lsprotocol.converters import get_converter
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    default_converter,
)

T = TypeVar("T")

_converter = get_converter()


def to_json(value: Any) -> Any:
    return _converter.unstructure(value)


def from_json(value: Any, cls: type[T]) -> T:
    return _converter.structure(value, cls)


def plain_json_converter() -> Any:
    """pygls's converter for our server and clients, except that what a custom method carries (its
    params, its result) stays plain JSON. pygls makes namedtuples of it, which renames every key that is
    not a Python identifier (`from`, `my-server`: the keys of a tool call's arguments) to `_0`, `_1`, ...,
    and drops a key named `type_name`. A request or notification may leave "params" out (vscode-jsonrpc
    does)."""
    converter = default_converter()
    converter.register_structure_hook(JsonRPCRequestMessage, lambda obj, cls: cls(**{"params": None, **obj}))
    converter.register_structure_hook(JsonRPCNotification, lambda obj, cls: cls(**{"params": None, **obj}))
    converter.register_structure_hook(JsonRPCResponseMessage, lambda obj, cls: cls(**obj))
    return converter
