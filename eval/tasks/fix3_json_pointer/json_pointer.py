"""RFC 6901 JSON pointers: parse them, and read, set or remove the values they point at."""

from __future__ import annotations

from typing import Any, Iterable, Iterator


class PointerError(LookupError):
    """A pointer that is malformed, or that does not lead to a value in the document."""


def escape_token(token: str) -> str:
    """Escape one reference token: ``~`` becomes ``~0`` and ``/`` becomes ``~1``."""
    return token.replace("~", "~0").replace("/", "~1")


def format_pointer(tokens: Iterable[str]) -> str:
    """Join reference tokens into a pointer; no tokens is the root pointer ``""``."""
    return "".join("/" + escape_token(token) for token in tokens)


def parse_pointer(pointer: str) -> list[str]:
    """Split a pointer such as ``"/a~1b/0"`` into its unescaped reference tokens."""
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise PointerError(f"pointer must start with '/': {pointer!r}")
    tokens = []
    for raw in pointer[1:].split("/"):
        position = raw.find("~")
        while position != -1:
            if raw[position + 1 : position + 2] not in ("0", "1"):
                raise PointerError(f"invalid escape in {raw!r} of {pointer!r}")
            position = raw.find("~", position + 2)
        tokens.append(raw.replace("~0", "~").replace("~1", "/"))
    return tokens


def _array_index(array: list[Any], token: str, pointer: str, *, allow_end: bool = False) -> int:
    if token == "-" and allow_end:
        return len(array)
    if not token.isdigit() or (len(token) > 1 and token.startswith("0")):
        raise PointerError(f"invalid array index {token!r} in {pointer!r}")
    index = int(token)
    limit = len(array) + 1 if allow_end else len(array)
    if index >= limit:
        raise PointerError(f"index {index} out of range in {pointer!r}")
    return index


def _child(current: Any, token: str, pointer: str) -> Any:
    if isinstance(current, dict):
        if token not in current:
            raise PointerError(f"no member {token!r} in {pointer!r}")
        return current[token]
    if isinstance(current, list):
        return current[_array_index(current, token, pointer)]
    raise PointerError(f"cannot descend into {type(current).__name__} at {token!r} in {pointer!r}")


def resolve(document: Any, pointer: str) -> Any:
    """The value ``pointer`` points at; :class:`PointerError` if there is none."""
    current = document
    for token in parse_pointer(pointer):
        current = _child(current, token, pointer)
    return current


def get(document: Any, pointer: str, default: Any = None) -> Any:
    """Like :func:`resolve`, but ``default`` where the pointer leads nowhere."""
    try:
        return resolve(document, pointer)
    except PointerError:
        return default


def set_value(document: Any, pointer: str, value: Any) -> Any:
    """Set or add the value at ``pointer`` and return the document.

    In an array, ``-`` (or the index just past the end) appends. The root pointer replaces the
    whole document, so callers should always use the returned value.
    """
    tokens = parse_pointer(pointer)
    if not tokens:
        return value
    parent = document
    for token in tokens[:-1]:
        parent = _child(parent, token, pointer)
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        index = _array_index(parent, last, pointer, allow_end=True)
        if index == len(parent):
            parent.append(value)
        else:
            parent[index] = value
    else:
        raise PointerError(f"cannot set {last!r} on {type(parent).__name__} in {pointer!r}")
    return document


def remove(document: Any, pointer: str) -> Any:
    """Remove the value at ``pointer`` and return it; array items after it shift left."""
    tokens = parse_pointer(pointer)
    if not tokens:
        raise PointerError("cannot remove the root of a document")
    parent = resolve(document, format_pointer(tokens[:-1]))
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PointerError(f"no member {last!r} in {pointer!r}")
        return parent.pop(last)
    if isinstance(parent, list):
        return parent.pop(_array_index(parent, last, pointer))
    raise PointerError(f"cannot remove {last!r} from {type(parent).__name__} in {pointer!r}")


def leaves(document: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Yield ``(pointer, value)`` for every value in the document that is not an object or array."""
    if isinstance(document, dict):
        for key, value in document.items():
            yield from leaves(value, prefix + "/" + escape_token(key))
    elif isinstance(document, list):
        for index, value in enumerate(document):
            yield from leaves(value, f"{prefix}/{index}")
    else:
        yield prefix, document
