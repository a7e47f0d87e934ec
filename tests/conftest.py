"""Shared fixtures: the real test model (never skipped: a missing model fails the run) and engines."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_lsp
from pytest_lsp import ClientServerConfig

from lsp_server.engine import models, native
from lsp_server.lsp import protocol

from .lsp_client import SERVER_COMMAND, AssistantClient, initialize_params, make_client
from .tiny_model import write_tiny_model

TEST_MODEL = models.TEST_MODEL
ROOT = Path(__file__).resolve().parent.parent


# Tests that use these need a real model: they are marked `real_model`, which `make test-fast` leaves out.
MODEL_FIXTURES = frozenset({"test_model_path", "default_model_path", "warm_engine", "cold_engine", "client"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if MODEL_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.real_model)


@pytest.fixture(scope="session")
def test_model_path() -> Path:
    try:
        return models.resolve(TEST_MODEL)
    except models.ModelError as exc:
        pytest.fail(f"{exc} (make test installs it)", pytrace=False)


@pytest.fixture(scope="session")
def default_model_path() -> Path:
    """The default model: the code-action tests need a model that writes edits that apply."""
    try:
        return models.resolve(models.DEFAULT_MODEL)
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


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small project: the demo's inventory module, its tests, and a ~2,000-token file."""
    root = tmp_path_factory.mktemp("workspace")
    shutil.copy(ROOT / "examples" / "inventory.py", root / "inventory.py")
    shutil.copy(ROOT / "examples" / "test_inventory.py", root / "test_inventory.py")
    engine = ROOT / "lsp_server" / "engine"
    big = "\n\n".join((engine / name).read_text() for name in ("local.py", "models.py"))
    (root / "big.py").write_text(big[:7000])
    return root


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=SERVER_COMMAND, client_factory=make_client), scope="module"
)
async def client(
    lsp_client: AssistantClient,
    request: pytest.FixtureRequest,
    workspace: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[None]:
    """A server over stdio on the test model, with the test module's SERVER_OPTIONS."""
    options = {**request.module.SERVER_OPTIONS, "cacheDir": str(tmp_path_factory.mktemp("cache"))}
    result = await lsp_client.initialize_session(initialize_params(workspace, options))
    lsp_client.server_info = result
    await lsp_client.wait_for_status(protocol.READY)
    yield
    await lsp_client.shutdown_session()
