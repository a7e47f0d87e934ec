"""Adding a code action kind with a behaviour of its own takes its row and its module, nothing else:
tests/new_action_kind.py is both, for a kind that exists only here ("Sort lines", whose ledger admits
only the selection's own lines in another order). A real server that imported it first offers the
kind, resolves it through the same turn as the others, and refuses an answer that breaks its rule; the
model is scripted, behind the real remote backend (test_chat_answers.ScriptedModel)."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

from lsprotocol import types
from pytest_lsp import ClientServerConfig

from .lsp_client import AssistantClient, initialize_params, make_client, open_document
from .test_chat_answers import ScriptedModel, rendered_probe  # noqa: F401 (a fixture)
from .test_code_actions import edited_texts, list_actions
from .test_remote_backend import OPTIONS, settled

ROOT = Path(__file__).resolve().parent.parent
# The server, with the kind's module imported before any of the server's own.
SERVER_WITH_THE_KIND = [
    sys.executable,
    "-c",
    f"import sys; sys.path.insert(0, {str(ROOT)!r}); import tests.new_action_kind; "
    "from lsp_server.clients.cli import main; sys.exit(main())",
    "--stdio",
]
IMPORTS = "import sys\nimport os\nimport json\n"


async def test_a_kind_added_by_its_row_and_module_is_offered_and_keeps_to_its_own_rule(
    tmp_path: Path,
    rendered_probe: str,  # noqa: F811
):
    (tmp_path / "imports.py").write_text(IMPORTS)
    changed = "```python\nimport os\nimport re\nimport sys\n```"
    model = ScriptedModel([changed, "```python\nimport json\nimport os\nimport sys\n```"], rendered_probe)
    threading.Thread(target=model.serve_forever, daemon=True).start()
    config = ClientServerConfig(
        server_command=SERVER_WITH_THE_KIND, client_factory=make_client, server_env=dict(os.environ)
    )
    client = await config.start()
    assert isinstance(client, AssistantClient)
    try:
        backend = {"url": model.url, "model": "scripted"}
        await client.initialize_session(initialize_params(tmp_path, {**OPTIONS, "backend": backend}))
        await settled(client)
        uri = open_document(client, tmp_path / "imports.py")
        lines = types.Range(types.Position(0, 0), types.Position(3, 0))
        offered = {a.data["kind"]: a for a in await list_actions(client, uri, lines)}
        sort = offered["sort"]
        assert sort.title == "Llama: Sort lines" and sort.kind == "refactor.rewrite.llama.sort"
        resolved = await client.code_action_resolve_async(sort)
        assert resolved.edit is not None
        assert edited_texts(client, resolved.edit, tmp_path) == {
            tmp_path / "imports.py": "import json\nimport os\nimport sys\n"
        }
    finally:
        await client.shutdown_session()
        await client.stop()
        model.shutdown()
        model.server_close()
    # The first answer changed a line: the kind's admission refused it, and the model read why.
    prompts = [str(request["messages"]) for request in model.requests]
    # Its admission's refusal (new_action_kind.NOT_REORDERED), as the model reads it: that module is not
    # imported here, since it adds its kind to the table of the process that imports it.
    refusal = "hat changes a line; write the same lines, each exactly as it is, in sorted order"
    assert len(prompts) == 2 and refusal not in prompts[0] and refusal in prompts[1], prompts
