"""Shared fixtures: the real test model (never skipped: a missing model fails the run), engines, and
the backends a server runs on.

A test marked `@pytest.mark.backends("local", "remote")` runs once per backend: on the model in the
server's own process, and on a real llama-server (harness/llama_server.py) serving the same model, with
the same assertions. Every other test runs on the local backend only.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio
from pytest_lsp import ClientServerConfig

from harness.llama_server import LlamaServer
from harness.tiny_model import write_tiny_model
from lsp_server.engine import models, native
from lsp_server.lsp import protocol

from .lsp_client import SERVER_COMMAND, AssistantClient, initialize_params, make_client

TEST_MODEL = models.TEST_MODEL
ROOT = Path(__file__).resolve().parent.parent


# Tests that use these need a real model: they are marked `real_model`, which `make test-fast` leaves out.
MODEL_FIXTURES = frozenset(
    {"test_model_path", "default_model_path", "warm_engine", "cold_engine", "client", "llama_servers"}
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if MODEL_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.real_model)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Every test that has a server runs on the backends its `backends` mark names (local by default);
    by module, so that one server per backend serves a whole module."""
    if "backend" in metafunc.fixturenames:
        mark = metafunc.definition.get_closest_marker("backends")
        metafunc.parametrize("backend", mark.args if mark else ("local",), indirect=True, scope="module")


# llama-server as the README's "For teams" section runs it: three slots of 4,096 tokens, and a slot goes
# to a request whose prompt shares at least 90% of what the slot holds. At llama-server's default (10%)
# a new conversation takes another's slot for the system prompt and tools they share, and the other's
# follow-up finds its conversation gone.
TEAM_SERVER_OPTIONS = ("-c", "12288", "-np", "3", "--slot-prompt-similarity", "0.9")


class LlamaServers:
    """The llama-servers of this run, one per model, started when first needed."""

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self._running: dict[str, LlamaServer] = {}

    def serving(self, model: str) -> LlamaServer:
        if model not in self._running:
            try:
                path = models.resolve(model)
            except models.ModelError as exc:
                pytest.fail(f"{exc} (make test installs it)", pytrace=False)
            server = LlamaServer(path, model, self.workdir / f"{model}.log", *TEAM_SERVER_OPTIONS)
            self._running[model] = server.start()
        return self._running[model]

    def stop_all(self) -> None:
        for server in self._running.values():
            server.stop()


@pytest.fixture(scope="session")
def llama_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServers]:
    servers = LlamaServers(tmp_path_factory.mktemp("llama-server"))
    yield servers
    servers.stop_all()


@pytest.fixture(scope="module")
def backend(request: pytest.FixtureRequest) -> dict[str, object]:
    """The server options that choose the backend: none for local; for remote, a llama-server that
    serves the module's model."""
    if getattr(request, "param", "local") == "local":
        return {}
    servers: LlamaServers = request.getfixturevalue("llama_servers")
    model = request.module.SERVER_OPTIONS["model"]
    return {"backend": servers.serving(model).backend()}


@pytest.fixture(scope="session")
def test_model_path() -> Path:
    try:
        return models.resolve(TEST_MODEL)
    except models.ModelError as exc:
        pytest.fail(f"{exc} (make test installs it)", pytrace=False)


@pytest.fixture(scope="session")
def built_wheel() -> Path:
    """The package as users install it: `make dist`'s platform wheel (seconds: it reuses build/native)."""
    done = subprocess.run(["make", "-s", "dist"], cwd=ROOT, capture_output=True, text=True, timeout=900)
    wheels = sorted((ROOT / "dist").glob("llama_lsp-*.whl"))
    if done.returncode != 0 or len(wheels) != 1:
        pytest.fail(
            f"make dist failed ({done.returncode}), dist/ holds {wheels}:\n{done.stdout}{done.stderr}"
        )
    return wheels[0]


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


@pytest.fixture(scope="session")
def tiny_fim_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny model with fill-in-the-middle tokens: inline completion's engine, without a real model."""
    return write_tiny_model(tmp_path_factory.mktemp("tiny-fim") / "tiny-fim.gguf", fim=True)


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


# pytest_lsp.fixture fetches its fixtures at run time, where pytest cannot see that the client depends on
# the (parametrized) backend; this is the same fixture with its dependencies declared.
@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(
    request: pytest.FixtureRequest,
    workspace: Path,
    tmp_path_factory: pytest.TempPathFactory,
    backend: dict[str, object],
) -> AsyncIterator[AssistantClient]:
    """A server over stdio on the test model, with the test module's SERVER_OPTIONS, on the backend the
    test is parametrized with."""
    config = ClientServerConfig(server_command=SERVER_COMMAND, client_factory=make_client)
    lsp_client = await config.start(devtools=request.config.getoption("devtools"))
    assert isinstance(lsp_client, AssistantClient)
    options = {
        **request.module.SERVER_OPTIONS,
        "cacheDir": str(tmp_path_factory.mktemp("cache")),
        **backend,
    }
    result = await lsp_client.initialize_session(initialize_params(workspace, options))
    lsp_client.server_info = result
    await lsp_client.wait_for_status(protocol.READY)
    yield lsp_client
    await lsp_client.shutdown_session()
    await lsp_client.stop()
