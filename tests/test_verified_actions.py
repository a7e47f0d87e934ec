"""A Fix with `verifyCommand` set, over stdio on the default model: a failed check goes back to the model,
which tries again, and the result says whether the edit it returns passed."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from lsprotocol import types

from lsp_server.lsp import protocol

from .lsp_client import AssistantClient, open_document
from .test_code_actions import DISCOUNT_LINES, edited_texts, list_actions
from .test_code_actions import SERVER_OPTIONS as ACTION_OPTIONS

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.usefixtures("default_model_path")]

# The first two runs fail whatever the code: the look at the code as it is, and the first edit's check,
# so the retry path always runs; later runs are the tests. The counter lives outside the workspace,
# where only this test looks. It must outlive each check, and a check in the sandbox can write nothing
# that does (each starts from a fresh copy, and everything else is read-only or thrown away), so this
# test runs its checks without the sandbox: what it is about is the retries. The sandbox is
# tests/test_check_sandbox.py's, and test_code_actions.py's demo Fix runs its check in it.
RUNS = Path(tempfile.mkdtemp(prefix="llama-lsp-test-")) / "runs"
PYTEST = f"{sys.executable} -m pytest -q -p no:cacheprovider test_inventory.py"
VERIFY_COMMAND = (
    f"echo x >> {RUNS}; if test $(wc -l < {RUNS}) -gt 2; then {PYTEST}; else "
    "echo 'test_inventory.py: 1 failed (this check fails on purpose)'; exit 1; fi"
)
MAX_ATTEMPTS = 3
SERVER_OPTIONS = {
    **ACTION_OPTIONS,
    "verifyCommand": VERIFY_COMMAND,
    "verifySandbox": "none",
    "maxVerifyAttempts": MAX_ATTEMPTS,
}


def run_tests(project: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_inventory.py"],
        cwd=project,
        capture_output=True,
        text=True,
    )


async def test_a_fix_whose_first_check_fails_is_retried_and_says_how_its_check_went(
    client: AssistantClient, workspace: Path, tmp_path: Path
):
    before = {path.name: path.read_text() for path in workspace.iterdir() if path.is_file()}
    uri = open_document(client, workspace / "inventory.py")
    diagnostic = types.Diagnostic(
        range=DISCOUNT_LINES,
        message="test_apply_discount failed: apply_discount(100.0, 10) returned -900.0, expected 90.0",
        severity=types.DiagnosticSeverity.Error,
        source="pytest",
    )
    action = next(
        a for a in await list_actions(client, uri, DISCOUNT_LINES, [diagnostic]) if a.data["kind"] == "fix"
    )
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=protocol.COMMAND_CODE_ACTION, arguments=[action.data])
    )
    verification = result["verification"]
    assert verification["command"] == VERIFY_COMMAND and verification["sandbox"] == "none"
    assert RUNS.exists()  # the check ran on the code as it was, which failed ...
    assert verification["passedBefore"] is False
    # ... then on the first edit, on purpose, so more candidates were written. A candidate that repeats
    # a failed block is refused without a check: `attempts` counts the checks that ran.
    blocks = [call for call in result["toolCalls"] if call["name"] == "write_block"]
    assert len(blocks) >= 2, blocks
    assert 1 <= verification["attempts"] <= min(len(blocks), MAX_ATTEMPTS)
    # The failed check's output is what the first candidate got back.
    assert "fails on purpose" in result["toolCalls"][0]["result"]
    # Nothing was written in the workspace, not even by the command: it ran on a copy.
    assert {p.name: p.read_text() for p in workspace.iterdir() if p.is_file()} == before

    # Whatever came back is what the result says it is.
    (tmp_path / "test_inventory.py").write_text(before["test_inventory.py"])
    (tmp_path / "inventory.py").write_text(before["inventory.py"])
    for path, text in edited_texts(client, client.applied_edits[-1].edit, workspace).items():
        (tmp_path / path.name).write_text(text)
    tests = run_tests(tmp_path)
    if verification["passed"]:
        assert tests.returncode == 0, tests.stdout
        assert verification["summary"].startswith("verified:")
    else:
        # Every attempt was used.
        assert verification["passed"] is False
        assert len(blocks) == MAX_ATTEMPTS, blocks
        assert verification["output"] and verification["summary"].startswith("not verified:")
