"""The only module that touches cffi: loads libllama_lsp_native and exposes it as plain Python.

Declarations come from native/include/llama_lsp.h, installed beside the library. Every JSON string the
library returns is freed here, and every error object becomes a NativeError subclass, so callers see
dicts and exceptions, never pointers. At load the library's ABI version must equal ABI_VERSION: a stale
build is refused with an error that says how to rebuild it.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import cffi

_LIBRARY_NAME = "libllama_lsp_native.so"
_HEADER_NAME = "llama_lsp.h"

ABI_VERSION = 4
"""The version of llama_lsp.h this module is written for; the library must report exactly this."""

log = logging.getLogger("llama_lsp.native")


class NativeError(Exception):
    """An error reported by the native engine; `kind` is its machine-readable type."""

    kind = "internal"

    def __init__(self, message: str, kind: str | None = None):
        super().__init__(message)
        if kind:
            self.kind = kind


class InvalidRequest(NativeError):
    kind = "invalid_request"


class ContextOverflow(NativeError):
    kind = "context_overflow"


class ModelLoadError(NativeError):
    kind = "model_load"


class DecodeError(NativeError):
    kind = "decode_failed"


class EngineBusy(NativeError):
    kind = "busy"


_ERRORS: dict[str, type[NativeError]] = {
    cls.kind: cls for cls in (InvalidRequest, ContextOverflow, ModelLoadError, DecodeError, EngineBusy)
}
_ERRORS["model_not_found"] = ModelLoadError
_ERRORS["context"] = ModelLoadError


def raise_for_error(payload: dict[str, Any]) -> dict[str, Any]:
    error = payload.get("error")
    if isinstance(error, dict):
        kind = str(error.get("type", "internal"))
        raise _ERRORS.get(kind, NativeError)(str(error.get("message", "unknown error")), kind)
    return payload


def _find_library() -> tuple[Path, Path]:
    override = os.environ.get("LLAMA_LSP_NATIVE_LIB")
    if override:
        lib = Path(override)
        return lib, lib.with_name(_HEADER_NAME)
    package = resources.files("lsp_server")
    lib_res, header_res = package / _LIBRARY_NAME, package / _HEADER_NAME
    if not lib_res.is_file():
        raise NativeError(
            f"{_LIBRARY_NAME} is not installed beside lsp_server; build it with `make setup` "
            "(or `pip install .`)",
            "not_built",
        )
    return Path(str(lib_res)), Path(str(header_res))


def _declarations(header: Path) -> str:
    # The header is plain C with only comments besides declarations; cffi's parser takes it as is.
    return header.read_text()


_ffi = cffi.FFI()
_lib: Any = None
_declared = False  # cffi refuses a second cdef of the same functions
# The server's thread (stats, version) and the engine's thread may both load first: one loads.
_loading = threading.Lock()

_LEVELS = {1: logging.DEBUG, 2: logging.INFO, 3: logging.WARNING, 4: logging.ERROR}


def _check_abi(lib: Any, library: Path) -> None:
    """Refuses a library built from other sources than this package: a stale build after an update."""
    try:
        found: int | None = int(lib.llama_lsp_abi_version())
    except AttributeError:  # a library (or its header) from before the version handshake
        found = None
    if found != ABI_VERSION:
        raise NativeError(
            f"{library} has native ABI version {'unknown (too old)' if found is None else found}, "
            f"but this lsp_server expects version {ABI_VERSION}: the library and the Python code come "
            "from different versions. Rebuild the library with `make setup` (or reinstall the package: "
            "`pip install .`)",
            "abi_mismatch",
        )


def _load() -> Any:
    global _lib, _declared
    with _loading:
        if _lib is None:
            library, header = _find_library()
            try:
                if not _declared:
                    _ffi.cdef(_declarations(header))
                    _declared = True
                lib = _ffi.dlopen(str(library))
            except OSError as exc:  # missing, unreadable, or not a library for this machine
                raise NativeError(
                    f"could not open the native library: {exc}; rebuild it with `make setup` (or "
                    "`pip install .`), or unset LLAMA_LSP_NATIVE_LIB if it is set",
                    "not_built",
                ) from None
            _check_abi(lib, library)
            lib.llama_lsp_set_log_callback(_log_callback, _ffi.NULL)
            _lib = lib
        return _lib


@_ffi.callback("void(void *, int, const char *)")
def _log_callback(_user_data: Any, level: int, text: Any) -> None:
    message = _ffi.string(text).decode("utf-8", "replace").rstrip()
    if message:
        # llama.cpp is chatty at info level; keep it at debug unless it warns.
        log.log(_LEVELS.get(level, logging.DEBUG) if level >= 3 else logging.DEBUG, "%s", message)


def _take_json(pointer: Any) -> dict[str, Any]:
    if pointer == _ffi.NULL:
        raise NativeError("the native library returned nothing (out of memory?)")
    try:
        return json.loads(_ffi.string(pointer).decode("utf-8"))
    finally:
        _lib.llama_lsp_free_string(pointer)


def version() -> str:
    return _ffi.string(_load().llama_lsp_version()).decode()


def text_function(function: str, text: str, **args: Any) -> dict[str, Any]:
    """Runs one of the engine's pure text functions (llama_lsp_test_text) on text, for the tests;
    offsets are bytes."""
    data = text.encode()
    raw = _load().llama_lsp_test_text(function.encode(), data, len(data), json.dumps(args).encode())
    return raise_for_error(_take_json(raw))


PieceCallback = Callable[[str], "bool | None"]
"""Receives each streamed piece of text; returning False (not None) stops the generation."""


class NativeEngine:
    """An open model and context: a thin, checked wrapper over one llama_lsp_engine handle.

    Not thread-safe, except cancel(): one thread at a time drives it (see engine.local.Engine).
    """

    def __init__(self, model_path: str | os.PathLike[str], options: dict[str, Any]):
        lib = _load()
        error = _ffi.new("char **")
        handle = lib.llama_lsp_open(str(model_path).encode(), json.dumps(options).encode(), error)
        if handle == _ffi.NULL:
            raise_for_error(_take_json(error[0]))
            raise ModelLoadError(f"could not open {model_path}")
        self._handle = _ffi.gc(handle, lib.llama_lsp_close)

    def _call(self, function: Any, *args: Any) -> dict[str, Any]:
        if self._handle is None:
            raise NativeError("the engine is closed", "closed")
        return raise_for_error(_take_json(function(self._handle, *args)))

    def generate(self, request: dict[str, Any], on_piece: PieceCallback | None = None) -> dict[str, Any]:
        failure: list[BaseException] = []

        @_ffi.callback("int(void *, const char *, int)")
        def piece(_user_data: Any, text: Any, length: int) -> int:
            try:
                if on_piece is None:
                    return 0
                verdict = on_piece(_ffi.unpack(text, length).decode("utf-8", "replace"))
                return 1 if verdict is False else 0
            except BaseException as exc:  # stored and re-raised: an exception must not unwind C
                failure.append(exc)
                return 1

        result = self._call(_lib.llama_lsp_generate, json.dumps(request).encode(), piece, _ffi.NULL)
        if failure:
            raise failure[0]
        return result

    def cancel(self) -> None:
        if self._handle is not None:
            _lib.llama_lsp_cancel(self._handle)

    def yield_soon(self) -> None:
        """Stops the running call's prompt reading at the next chunk boundary, losing nothing."""
        if self._handle is not None:
            _lib.llama_lsp_yield(self._handle)

    def clear_cancel(self) -> None:
        if self._handle is not None:
            _lib.llama_lsp_clear_cancel(self._handle)

    def tokenize(self, request: dict[str, Any]) -> dict[str, Any]:
        return self._call(_lib.llama_lsp_tokenize, json.dumps(request).encode())

    def save_slots(self, directory: str | os.PathLike[str]) -> dict[str, Any]:
        return self._call(_lib.llama_lsp_save_slots, str(directory).encode())

    def restore_slots(self, directory: str | os.PathLike[str]) -> dict[str, Any]:
        return self._call(_lib.llama_lsp_restore_slots, str(directory).encode())

    def info(self) -> dict[str, Any]:
        return self._call(_lib.llama_lsp_info)

    def clear(self) -> dict[str, Any]:
        return self._call(_lib.llama_lsp_clear)

    def close(self) -> None:
        if self._handle is not None:
            handle, self._handle = self._handle, None
            _ffi.release(handle)  # runs llama_lsp_close now
