"""Shared fixtures: the real test model (never skipped: a missing model fails the run) and engines."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from lsp_server import models, native

from .tiny_model import write_tiny_model

TEST_MODEL = models.TEST_MODEL


@pytest.fixture(scope="session")
def test_model_path() -> Path:
    try:
        return models.resolve(TEST_MODEL)
    except models.ModelError as exc:
        pytest.fail(f"{exc} (make test installs it)", pytrace=False)


def open_engine(path: Path, **options: object) -> native.NativeEngine:
    defaults: dict[str, object] = {"n_ctx": 4096, "n_slots": 3}
    return native.NativeEngine(path, {**defaults, **options})


@pytest.fixture(scope="module")
def warm_engine(test_model_path: Path) -> Iterator[native.NativeEngine]:
    engine = open_engine(test_model_path)
    yield engine
    engine.close()


@pytest.fixture(scope="module")
def cold_engine(test_model_path: Path) -> Iterator[native.NativeEngine]:
    """A second engine whose cache is cleared before every request: the reference answers."""
    engine = open_engine(test_model_path)
    yield engine
    engine.close()


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random-weight model written for this run: fast checks of exact invariants."""
    return write_tiny_model(tmp_path_factory.mktemp("tiny") / "tiny.gguf")
