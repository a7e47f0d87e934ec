"""The version handshake between lsp_server/engine/native.py and the native library, without a model."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lsp_server.engine import native


def test_the_library_speaks_the_abi_version_this_package_expects():
    lib = native._load()
    assert lib.llama_lsp_abi_version() == native.ABI_VERSION
    assert lib.LLAMA_LSP_ABI_VERSION == native.ABI_VERSION  # the header installed beside it agrees


class _StaleLibrary:
    def llama_lsp_abi_version(self) -> int:
        return native.ABI_VERSION + 1


def test_a_library_of_another_abi_version_is_refused_with_the_fix_named():
    with pytest.raises(native.NativeError) as refused:
        native._check_abi(_StaleLibrary(), Path("/lib/libllama_lsp_native.so"))
    assert refused.value.kind == "abi_mismatch"
    message = str(refused.value)
    assert f"ABI version {native.ABI_VERSION + 1}," in message
    assert f"expects version {native.ABI_VERSION}:" in message
    assert "make setup" in message and "pip install ." in message


def test_a_library_from_before_the_handshake_is_refused():
    with pytest.raises(native.NativeError, match=r"unknown \(too old\).*make setup"):
        native._check_abi(object(), Path("/lib/libllama_lsp_native.so"))


def test_loading_an_old_build_fails_at_load_with_a_clear_error(tmp_path):
    """A real load: the library beside a header from before the handshake, as a stale install has."""
    library = Path(native._find_library()[0])
    header = library.with_name("llama_lsp.h").read_text()
    old_header = header.replace("int llama_lsp_abi_version(void);", "")
    assert old_header != header
    shutil.copy(library, tmp_path / library.name)
    (tmp_path / "llama_lsp.h").write_text(old_header)
    script = "from lsp_server.engine import native\nnative.version()\n"
    env = {**os.environ, "LLAMA_LSP_NATIVE_LIB": str(tmp_path / library.name)}
    run = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode != 0
    assert "NativeError" in run.stderr and "make setup" in run.stderr
