"""Failing tests as diagnostics (`testDiagnostics`): reading real pytest and unittest reports
(test_failures.py), and the server publishing them after a save, for real, in the check's sandbox."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types

from lsp_server.assistant.checks.failures import failure_sites, parse_failures
from lsp_server.lsp import protocol
from lsp_server.lsp.failure_diagnostics import SOURCE

from .lsp_client import SERVER_COMMAND, AssistantClient, initialize_params, make_client, open_document

SHOP = (
    "def total(prices):\n"
    "    return sum(prices) + 1\n"
    "\n"
    "\n"
    "def discount(price, percent):\n"
    "    if percent > 100:\n"
    '        raise ValueError("percent over 100")\n'
    "    return price * (100 - percent) / 100\n"
)
PYTEST_TESTS = (
    "from shop import discount, total\n"
    "\n"
    "\n"
    "def test_total():\n"
    "    assert total([1, 2]) == 3\n"
    "\n"
    "\n"
    "def test_discount():\n"
    "    assert discount(50, 100) == 0\n"
    "\n"
    "\n"
    "class TestDiscount:\n"
    "    def test_too_much(self):\n"
    "        assert discount(50, 120) == 0\n"
)
UNITTEST_TESTS = (
    "import unittest\n"
    "\n"
    "import shop\n"
    "\n"
    "\n"
    "class TotalTest(unittest.TestCase):\n"
    "    def test_total(self):\n"
    "        self.assertEqual(shop.total([1, 2]), 3)\n"
)


def project(root: Path, tests: str) -> Path:
    (root / "shop.py").write_text(SHOP)
    (root / "test_shop.py").write_text(tests)
    return root


def run(root: Path, *command: str) -> str:
    done = subprocess.run([sys.executable, *command], cwd=root, capture_output=True, text=True)
    return done.stdout + done.stderr


def test_pytest_failures_point_at_the_test_and_the_function_under_test(tmp_path: Path):
    root = project(tmp_path, PYTEST_TESTS)
    output = run(root, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--tb=short", "test_shop.py")
    failures = {failure.test: failure for failure in parse_failures(output, str(root))}
    assert set(failures) == {"test_shop.py::test_total", "test_shop.py::TestDiscount::test_too_much"}
    # The assertion failed in the test: the function its line calls is the one under test.
    total = failures["test_shop.py::test_total"]
    assert total.message.startswith("assert 4 == 3")
    sites = failure_sites(total, root)
    assert [(s.path, s.line) for s in sites] == [("shop.py", 1), ("test_shop.py", 5)]
    assert sites[0].message.startswith("test_shop.py::test_total failed: assert 4 == 3")
    # Raised in the code under test: where it was raised.
    too_much = failures["test_shop.py::TestDiscount::test_too_much"]
    assert too_much.message == "ValueError: percent over 100"
    assert [(s.path, s.line) for s in failure_sites(too_much, root)] == [("shop.py", 7), ("test_shop.py", 14)]


def test_unittest_failures_are_read_too(tmp_path: Path):
    root = project(tmp_path, UNITTEST_TESTS)
    (failure,) = parse_failures(run(root, "-m", "unittest", "test_shop.py"), str(root))
    assert failure.test.endswith("TotalTest.test_total") and failure.message == "AssertionError: 4 != 3"
    assert [(s.path, s.line) for s in failure_sites(failure, root)] == [("shop.py", 1), ("test_shop.py", 8)]


def test_a_run_that_passes_has_no_failures(tmp_path: Path):
    root = project(tmp_path, "from shop import total\n\n\ndef test_one():\n    assert total([]) == 1\n")
    assert parse_failures(run(root, "-m", "pytest", "-q", "--tb=short", "test_shop.py"), str(root)) == []


SERVER_OPTIONS = {"model": "qwen2.5-coder-0.5b", "contextSize": 2048, "warm": False, "testDiagnostics": True}


@pytest_lsp.fixture(
    config=pytest_lsp.ClientServerConfig(server_command=SERVER_COMMAND, client_factory=make_client),
    scope="module",
)
async def diagnosing_client(
    lsp_client: AssistantClient, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[AssistantClient]:
    root = project(tmp_path_factory.mktemp("shop"), PYTEST_TESTS)
    options = {**SERVER_OPTIONS, "cacheDir": str(tmp_path_factory.mktemp("cache"))}
    lsp_client.server_info = await lsp_client.initialize_session(initialize_params(root, options))
    await lsp_client.wait_for_status(protocol.READY)
    lsp_client.root = root  # type: ignore[attr-defined]
    yield lsp_client
    await lsp_client.shutdown_session()


async def diagnostics_of(client: AssistantClient, uri: str, count: int) -> Sequence[types.Diagnostic]:
    """The file's diagnostics once it has `count` of them (within the test run's time)."""
    for _ in range(600):
        shown = client.diagnostics.get(uri)
        if shown is not None and len(shown) == count:
            return shown
        await asyncio.sleep(0.05)
    raise AssertionError(f"{uri}: {client.diagnostics.get(uri)} after 30 s, wanted {count}")


def save(client: AssistantClient, uri: str) -> None:
    client.text_document_did_save(types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri)))


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.usefixtures("test_model_path")  # the server runs the 0.5B
async def test_failures_show_after_a_save_offer_fix_and_clear_when_the_tests_pass(diagnosing_client):
    client, root = diagnosing_client, diagnosing_client.root
    assert client.server_info.capabilities.text_document_sync.save  # the editor sends didSave
    shop = open_document(client, root / "shop.py")
    save(client, shop)
    on_shop = await diagnostics_of(client, shop, 2)
    assert {(d.range.start.line, d.source) for d in on_shop} == {(0, SOURCE), (6, SOURCE)}
    total = next(d for d in on_shop if d.range.start.line == 0)
    assert total.message.startswith("test_shop.py::test_total failed: assert 4 == 3")
    on_tests = await diagnostics_of(client, (root / "test_shop.py").as_uri(), 2)
    assert sorted(d.range.start.line for d in on_tests) == [4, 13]

    # The lightbulb on `def total` offers Fix, about that failure.
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            types.TextDocumentIdentifier(shop),
            total.range,
            types.CodeActionContext(diagnostics=[total]),
        )
    )
    fix = next(a for a in actions if a.data["kind"] == "fix")
    assert fix.title == f"Llama: Fix: {total.message.splitlines()[0][:60]}"
    assert fix.data["diagnostics"][0]["message"] == total.message

    # Fixed and saved: the test passes, and its diagnostics go; the other failure stays.
    (root / "shop.py").write_text(SHOP.replace("sum(prices) + 1", "sum(prices)"))
    save(client, shop)
    (left,) = await diagnostics_of(client, shop, 1)
    assert left.range.start.line == 6 and "test_too_much" in left.message

    # Turned off: every diagnostic it showed goes.
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(
            settings={"llamaLsp": {**SERVER_OPTIONS, "testDiagnostics": False}}
        )
    )
    await diagnostics_of(client, shop, 0)
    await diagnostics_of(client, (root / "test_shop.py").as_uri(), 0)


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.usefixtures("test_model_path")  # the server runs the 0.5B
async def test_tests_that_cannot_show_their_failures_say_why_once(diagnosing_client):
    """A run past verifyTimeout is killed: nothing to point at, so the editor is told, once."""
    client, root = diagnosing_client, diagnosing_client.root
    (root / "slow.py").write_text("def wait():\n    return 1\n")
    (root / "test_slow.py").write_text(
        "import time\n\nimport slow\n\n\ndef test_wait():\n    time.sleep(30)\n"
    )
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"llamaLsp": {**SERVER_OPTIONS, "verifyTimeout": 2}})
    )
    slow = open_document(client, root / "slow.py")

    def said() -> list[str]:
        return [m.message for m in client.messages if "slow.py" in m.message]

    save(client, slow)
    for _ in range(600):
        if said():
            break
        await asyncio.sleep(0.05)
    save(client, slow)  # the same again: not said twice
    await asyncio.sleep(4)  # past the second run's 2 s
    assert said() == [
        "llama-lsp: the tests for slow.py failed, but not in a way they can show: "
        "[killed: the check took longer than 2 s]"
    ]
    assert client.diagnostics.get(slow, []) == []
