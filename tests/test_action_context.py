"""What a code action's prompt reads besides the file: the definitions its block uses from the
workspace's other files (related.used_definitions, through the workspace index). A real server on a
small project, the model scripted behind the real remote backend (test_chat_answers.ScriptedModel),
so that the prompt it was sent can be read."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from lsprotocol import types

from lsp_server.lsp import protocol

from .lsp_client import open_document
from .test_chat_answers import ScriptedModel, rendered_probe  # noqa: F401 (a fixture)
from .test_code_actions import list_actions
from .test_related import CART, PRICES, TOTAL
from .test_remote_backend import language_server

FIXED = "```python\n" + TOTAL.replace("round(", "round(0 + ") + "```"


async def test_a_fix_reads_the_definitions_its_block_uses_from_other_files(
    tmp_path: Path,
    rendered_probe: str,  # noqa: F811
):
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "prices.py").write_text(PRICES)
    (tmp_path / "shop" / "cart.py").write_text(CART)
    model = ScriptedModel([FIXED] * 4, rendered_probe)
    threading.Thread(target=model.serve_forever, daemon=True).start()
    try:
        async with language_server(tmp_path, {"url": model.url, "model": "scripted"}) as client:
            for _ in range(200):  # the index builds in the background after `initialized`
                found = await client.request(protocol.SEARCH_CODEBASE, {"query": "discount"})
                if found["indexed"]["ready"]:
                    break
                await asyncio.sleep(0.05)
            uri = open_document(client, tmp_path / "shop" / "cart.py")
            total = types.Range(types.Position(7, 0), types.Position(13, 0))
            problem = types.Diagnostic(range=total, message="total() is off by a cent")
            fix = next(
                a for a in await list_actions(client, uri, total, [problem]) if a.data["kind"] == "fix"
            )
            await client.code_action_resolve_async(fix)
    finally:
        model.shutdown()
        model.server_close()
    asked = model.requests[0]["messages"][-1]["content"]
    # The definitions come first, then the code the action is about, then what it is asked.
    assert asked.startswith("Defined in other files, and used by lines 8-13:\n`shop/prices.py`, line 6:"), (
        asked
    )
    assert "def discount(price, percent):" in asked and "def subtotal" not in asked.split("Lines 8-13")[0]
    assert (
        asked.index("def discount") < asked.index("Lines 8-13 of `shop/cart.py`") < asked.index("corrected")
    )


async def test_codebase_in_a_question_reads_the_code_that_best_matches_it_first(
    tmp_path: Path,
    rendered_probe: str,  # noqa: F811
):
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "prices.py").write_text(PRICES)
    (tmp_path / "shop" / "cart.py").write_text(CART)
    (tmp_path / "notes.py").write_text("def unrelated():\n    return 'weather'\n")
    model = ScriptedModel(["In `shop/prices.py:1`."] * 3, rendered_probe)
    threading.Thread(target=model.serve_forever, daemon=True).start()
    try:
        async with language_server(tmp_path, {"url": model.url, "model": "scripted"}) as client:
            for _ in range(200):
                found = await client.request(protocol.SEARCH_CODEBASE, {"query": "discount"})
                if found["indexed"]["ready"]:
                    break
                await asyncio.sleep(0.05)
            asked = "@codebase Where is the discount of a price computed?"
            answer = await client.request(protocol.CHAT, {"message": asked})
            await client.request(protocol.CHAT, {"message": "Where is the discount of a price computed?"})
            always = {"backend": {"url": model.url, "model": "scripted"}, "chatCodebase": "always"}
            client.workspace_did_change_configuration(
                types.DidChangeConfigurationParams(settings={"llamaLsp": always})
            )
            await client.request(protocol.CHAT, {"message": "Where is the discount of a price computed?"})
    finally:
        model.shutdown()
        model.server_close()
    assert answer["content"] == "In `shop/prices.py:1`."
    with_codebase, without, always_read = (request["messages"][-1]["content"] for request in model.requests)
    assert with_codebase.startswith(
        "Code from the workspace that may answer it:\n`shop/prices.py`, line 1:\n"
    )
    assert "def discount(price, percent):" in with_codebase and "weather" not in with_codebase
    assert (
        "@codebase" not in with_codebase and "\nWhere is the discount of a price computed?\n" in with_codebase
    )
    assert "`path:line`" in with_codebase
    assert "def discount" not in without and "`path:line`" not in without
    assert "def discount" in always_read  # chatCodebase "always": as if every question said @codebase
