"""LSP types to and from plain JSON, in one place: lsprotocol's own converter.

Our custom methods carry plain JSON (lsp_server.lsp.protocol); where one of them holds an LSP type (a
WorkspaceEdit in a chat result, a Range in a code action's data), it goes through here.
"""

from __future__ import annotations

from typing import Any, TypeVar

from lsprotocol.converters import get_converter

T = TypeVar("T")

_converter = get_converter()


def to_json(value: Any) -> Any:
    return _converter.unstructure(value)


def from_json(value: Any, cls: type[T]) -> T:
    return _converter.structure(value, cls)
