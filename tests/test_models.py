"""The model catalogue: resolution, clear errors, idempotent install, and the hash check."""

from __future__ import annotations

import dataclasses
import time

import pytest

from lsp_server.engine import models


def test_a_path_to_any_gguf_resolves_to_itself(tmp_path):
    model = tmp_path / "custom.gguf"
    model.write_bytes(b"GGUF")
    assert models.resolve(str(model)) == model


def test_an_unknown_name_says_how_to_install_a_model():
    with pytest.raises(models.ModelError, match=r"llama-lsp model install qwen2\.5-coder-1\.5b"):
        models.resolve("no-such-model")


def test_a_known_name_that_is_not_installed_names_its_install_command(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    with pytest.raises(models.ModelError, match="llama-lsp model install gemma3-270m"):
        models.resolve("gemma3-270m")


def test_installing_an_installed_model_finishes_at_once(test_model_path):
    started = time.monotonic()
    assert models.install(models.TEST_MODEL) == test_model_path
    assert time.monotonic() - started < 1.0


def test_a_checksum_mismatch_installs_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    genuine = models.CATALOGUE["gemma3-270m"]
    forged = dataclasses.replace(genuine, name="forged-270m", sha256="0" * 64)
    monkeypatch.setitem(models.CATALOGUE, forged.name, forged)
    with pytest.raises(models.ModelError, match="checksum mismatch"):
        models.install(forged.name, progress=None)
    assert not models.is_installed(forged)
    assert list(models.models_dir().iterdir()) == []  # no partial file, no parts left behind
