"""MCP tool servers in chat (issue 43), against a real MCP server written with the SDK
(tests/mcp_test_server.py) over stdio: no mock of the SDK or of the server.

The servers' connections (lsp_server/assistant/tools/mcp_servers.py): listing, calls, an error result, a
server that dies mid-call and is started again, one that never answers, one that floods, a changed tool
list, one that cannot start. The tools in chat (mcp_tools.py): names, the limit, the schema check, the
user's consent. The configuration (mcp_config.py, lsp/mcp.py): the shapes, the project's files, and an
untrusted workspace, where nothing starts. Last, the test model over LSP calls an MCP tool, answers with
its result, and a write tool asks the editor first (`assistant/confirmToolCall`).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from pytest_lsp import ClientServerConfig

from harness.published_mcp import FILESYSTEM_SERVER, same_folder_every_run
from lsp_server.assistant.tools import mcp_servers
from lsp_server.assistant.tools.mcp_config import (
    McpConfigError,
    McpServerConfig,
    expand,
    parse_servers,
    project_servers,
)
from lsp_server.assistant.tools.mcp_servers import McpServers, McpTool
from lsp_server.assistant.tools.mcp_tools import Consent, ConsentRequest, McpToolbox, offer, server_offers
from lsp_server.lsp import protocol, settings

from .conftest import ROOT
from .lsp_client import SERVER_COMMAND, AssistantClient, initialize_params, make_client, open_document
from .test_warming import wait_until_warm

SCRIPT = Path(__file__).with_name("mcp_test_server.py")
ALL_TOOLS = ["lookup_ticket", "create_note", "broken", "crash", "hang", "flood", "add_tool"]


def tracker(tmp_path: Path, *args: str, name: str = "tracker") -> McpServerConfig:
    """The test server, writing its notes and starts under tmp_path (the SDK passes a server only a
    few of our variables, and those its `env` sets)."""
    env = {"MCP_TEST_NOTES": str(tmp_path / "notes.txt"), "MCP_TEST_STARTS": str(tmp_path / "starts.txt")}
    return McpServerConfig(name, command=sys.executable, args=(str(SCRIPT), *args), env=tuple(env.items()))


def starts(tmp_path: Path) -> int:
    path = tmp_path / "starts.txt"
    return len(path.read_text().splitlines()) if path.exists() else 0


def notes(tmp_path: Path) -> str:
    path = tmp_path / "notes.txt"
    return path.read_text() if path.exists() else ""


@pytest_asyncio.fixture
async def servers(tmp_path: Path) -> AsyncIterator[McpServers]:
    servers = McpServers()
    await servers.configure([tracker(tmp_path)])
    yield servers
    await servers.close()


# --- the connections ------------------------------------------------------------------------------


async def test_the_tools_are_listed_in_order_with_their_read_only_hints(servers: McpServers) -> None:
    tools = await servers.tools(wait_s=30)
    assert [tool.name for tool in tools] == ALL_TOOLS
    read_only = {tool.name: tool.read_only for tool in tools}
    assert read_only["lookup_ticket"] and not read_only["create_note"] and not read_only["add_tool"]
    assert servers.stats_json() == [
        {"name": "tracker", "source": "settings", "state": "running", "tools": 7, "starts": 1, "error": None}
    ]


async def test_a_call_gives_the_tools_text_and_an_error_result_is_an_error(servers: McpServers) -> None:
    await servers.tools(wait_s=30)
    server = servers.server("tracker")
    assert server is not None
    found = await server.call("lookup_ticket", {"ticket": "ABC-12"})
    assert found.ok and "Priya Raman" in found.text
    failed = await server.call("broken", {})
    assert not failed.ok and "database is locked" in failed.text


async def test_a_server_that_dies_mid_call_gives_an_error_result_and_the_next_call_starts_it_again(
    servers: McpServers, tmp_path: Path
) -> None:
    await servers.tools(wait_s=30)
    server = servers.server("tracker")
    assert server is not None
    began = time.monotonic()
    died = await server.call("crash", {})
    assert not died.ok
    assert "stopped while crash ran" in died.text and "crashing on purpose" in died.text  # its stderr
    assert server.stats_json()["state"] == "failed"
    assert server.tools, "its last tool list stays known, so the tools a chat offers do not change"
    again = await server.call("lookup_ticket", {"ticket": "ABC-13"})
    assert again.ok and "Tom Okafor" in again.text
    assert starts(tmp_path) == 2 and server.stats_json()["starts"] == 2
    assert time.monotonic() - began < 20
    # Dying again soon after a start: the next start waits out a backoff, and a call says so at once.
    await server.call("crash", {})
    waited = time.monotonic()
    refused = await server.call("lookup_ticket", {"ticket": "ABC-13"})
    assert not refused.ok and "started again in" in refused.text
    assert time.monotonic() - waited < 1


async def test_a_call_that_never_answers_times_out(servers: McpServers) -> None:
    await servers.tools(wait_s=30)
    server = servers.server("tracker")
    assert server is not None
    began = time.monotonic()
    outcome = await server.call("hang", {}, timeout_s=1)
    assert not outcome.ok and outcome.text == "hang did not answer within 1 s"
    assert time.monotonic() - began < 5
    assert (await server.call("lookup_ticket", {"ticket": "ABC-12"})).ok  # the server still serves


async def test_a_flood_of_output_is_cut_with_a_note(servers: McpServers) -> None:
    await servers.tools(wait_s=30)
    server = servers.server("tracker")
    assert server is not None
    outcome = await server.call("flood", {})
    assert outcome.ok
    assert len(outcome.text) < mcp_servers.OUTPUT_MAX_CHARS + 200
    assert outcome.text.endswith("only the first 8,000 are shown]")
    assert "the tool's output was 1,0" in outcome.text


async def test_a_changed_tool_list_is_picked_up(servers: McpServers) -> None:
    await servers.tools(wait_s=30)
    server = servers.server("tracker")
    assert server is not None
    assert (await server.call("add_tool", {})).ok
    deadline = time.monotonic() + 10
    while "added_tool" not in [tool.name for tool in server.tools] and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert [tool.name for tool in server.tools] == [*ALL_TOOLS, "added_tool"]
    assert (await server.call("added_tool", {})).text == "the added tool ran"


async def test_a_server_that_cannot_start_says_why(tmp_path: Path) -> None:
    servers = McpServers()
    missing = McpServerConfig("missing", command=str(tmp_path / "no-such-server"))
    await servers.configure([tracker(tmp_path, "--fail-start", name="broken"), missing])
    try:
        assert await servers.tools(wait_s=30) == []
        broken, gone = servers.stats_json()
        assert broken["state"] == "failed" and "cannot open the tracker's database" in broken["error"]
        assert gone["state"] == "failed" and "no such command" in gone["error"]
        server = servers.server("broken")
        assert server is not None
        outcome = await server.call("lookup_ticket", {"ticket": "ABC-12"})
        assert not outcome.ok and "not running" in outcome.text
    finally:
        await servers.close()


async def test_a_changed_configuration_stops_the_server_and_an_unchanged_one_keeps_it(
    servers: McpServers, tmp_path: Path
) -> None:
    await servers.tools(wait_s=30)
    assert not await servers.configure([tracker(tmp_path)])
    assert servers.stats_json()[0]["state"] == "running"
    assert await servers.configure([tracker(tmp_path, "--tools", "lookup_ticket")])
    assert servers.stats_json()[0]["state"] == "stopped"
    assert [tool.name for tool in await servers.tools(wait_s=30)] == ["lookup_ticket"]


def published_filesystem_server() -> str:
    assert FILESYSTEM_SERVER.exists(), f"{FILESYSTEM_SERVER} is missing: run `make published-mcp`"
    return str(FILESYSTEM_SERVER)


async def test_a_published_server_from_npm_is_listed_and_called(tmp_path: Path) -> None:
    (tmp_path / "plan.md").write_text("Ship 2.4.2 on Friday.\n")
    servers = McpServers()
    try:
        await servers.configure(
            [McpServerConfig("files", command=published_filesystem_server(), args=(str(tmp_path),))]
        )
        tools = {tool.name: tool for tool in await servers.tools(wait_s=60)}
        assert {"read_text_file", "list_directory", "write_file"} <= tools.keys()
        assert tools["read_text_file"].read_only and not tools["write_file"].read_only
        server = servers.server("files")
        assert server is not None
        read = await server.call("read_text_file", {"path": str(tmp_path / "plan.md")}, 30)
        assert read.ok and "Ship 2.4.2 on Friday." in read.text
        outside = await server.call("read_text_file", {"path": "/etc/hostname"}, 30)
        assert not outside.ok and "denied" in outside.text.lower()  # its own sandbox, as published
    finally:
        await servers.close()


# --- the tools in chat ----------------------------------------------------------------------------


async def test_the_offer_names_tools_server_dot_tool_within_the_limit(servers: McpServers) -> None:
    offered = offer(await servers.tools(wait_s=30), limit=3)
    assert [tool.name for tool in offered.tools] == [
        "tracker.lookup_ticket",
        "tracker.create_note",
        "tracker.broken",
    ]
    assert offered.left_out == ("tracker.crash", "tracker.hang", "tracker.flood", "tracker.add_tool")
    function = offered.tools[0].schema["function"]
    assert function["name"] == "tracker.lookup_ticket"
    assert function["description"].startswith("Look up a ticket")
    assert function["parameters"] == {
        "type": "object",
        "properties": {"ticket": {"type": "string"}},  # the titles cost tokens and say nothing
        "required": ["ticket"],
    }


async def test_a_question_is_offered_the_tools_that_match_it_and_none_when_none_does(
    servers: McpServers,
) -> None:
    tools = await servers.tools(wait_s=30)
    # Every tool's text holds its server's name ("tracker"); the ticket and the note decide.
    asked = offer(tools, limit=2, question="Look up ticket ABC-12, then write a note on what you found.")
    assert [tool.name for tool in asked.tools] == ["tracker.lookup_ticket", "tracker.create_note"]
    assert "tracker.flood" in asked.left_out and len(asked.left_out) == len(ALL_TOOLS) - 2
    # In the servers' order, whatever matched best: the note is asked for first here.
    asked = offer(tools, limit=2, question="Create a note: the ticket ABC-12 is fixed.")
    assert [tool.name for tool in asked.tools] == ["tracker.lookup_ticket", "tracker.create_note"]
    # Nothing in common: no MCP tool, so the prompt is the one a chat without MCP servers has.
    assert offer(tools, limit=8, question="Why does this loop go on forever?").tools == ()
    # A word of a description alone ("assignee") names no server: none either.
    assert offer(tools, limit=8, question="Who is the assignee of this code?").tools == ()
    assert offer(tools, limit=8, question="").tools == ()


async def test_a_question_that_names_one_server_gets_its_tools_whole_as_read_ahead(
    servers: McpServers,
) -> None:
    """Where a named server's tools fit the limit they are all offered, in its order, whatever the
    question asks of them: the offer is then the one server_offers gives for that server, whose opening
    the warming reads ahead, so the question reads only itself."""
    tools = await servers.tools(wait_s=30)
    asked = offer(tools, limit=8, question="Look up ticket ABC-12 in the tracker.")
    assert [tool.name for tool in asked.tools] == [f"tracker.{name}" for name in ALL_TOOLS]
    assert offer(tools, limit=8, question="Ask the tracker who owns the billing service.") == asked
    assert server_offers(tools, limit=8) == [asked]
    assert server_offers(tools, limit=6) == []  # too many: a question gets the 6 that match it best


def test_a_server_named_by_name_leaves_out_those_a_word_of_a_tool_name_matches() -> None:
    """The word "create" is in the filesystem server's `create_directory`; a question that names the
    tracker's `create_note` gets the tracker's tools alone. Without a server or tool named as written,
    the words of the tools' names decide ("directory")."""
    schema = {"type": "object", "properties": {"path": {"type": "string"}}}

    def tool(server: str, name: str) -> McpTool:
        return McpTool(server, name, f"{name} of {server}", schema, read_only=False)

    tools = [tool("tracker", "lookup_ticket"), tool("tracker", "create_note")]
    tools += [tool("files", name) for name in ("create_directory", "edit_file", "list_directory")]
    tracker = ["tracker.lookup_ticket", "tracker.create_note"]
    for question in (
        "Use tracker.create_note to create a note titled standup.",
        "Use create_note to create a note titled standup.",
        "Ask the tracker to create a note titled standup.",
    ):
        assert [offered.name for offered in offer(tools, 16, question).tools] == tracker, question
    files = [f"files.{name}" for name in ("create_directory", "edit_file", "list_directory")]
    assert [offered.name for offered in offer(tools, 16, "What is in the directory docs?").tools] == files
    both = offer(tools, 16, "Create a directory named docs.").tools  # "create": both servers' tools
    assert [offered.name for offered in both] == tracker + files


class Asked:
    """The editor's side of consent: answers as told, and remembers what it was asked."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.requests: list[ConsentRequest] = []

    async def __call__(self, request: ConsentRequest) -> Any:
        self.requests.append(request)
        return self.answers.pop(0)


def toolbox(servers: McpServers, consent: Consent, asked: Asked, conversation: str = "c1") -> McpToolbox:
    tools = offer(servers.known_tools(), limit=8).tools
    return McpToolbox(conversation, tools, servers, consent, asked)


async def test_a_read_only_tool_runs_without_asking(servers: McpServers) -> None:
    await servers.tools(wait_s=30)
    asked = Asked()
    outcome = await toolbox(servers, Consent(), asked).run("tracker.lookup_ticket", {"ticket": "ABC-12"})
    assert outcome.ok and "Priya Raman" in outcome.text
    assert asked.requests == []


async def test_a_write_tool_asks_first_and_runs_only_when_allowed(
    servers: McpServers, tmp_path: Path
) -> None:
    await servers.tools(wait_s=30)
    consent = Consent()
    asked = Asked("deny", "allow", "allowConversation", "allowAlways")
    tools = toolbox(servers, consent, asked)
    note = {"title": "standup", "body": "ship on Friday"}

    denied = await tools.run("tracker.create_note", note)
    assert not denied.ok and "the user declined this call to tracker.create_note" in denied.text
    assert notes(tmp_path) == ""
    assert asked.requests == [
        ConsentRequest(
            "c1",
            "tracker",
            "create_note",
            "tracker.create_note",
            note,
            "Create a note in the team's notebook.",
        )
    ]

    assert (await tools.run("tracker.create_note", note)).ok  # "allow": this call only
    assert notes(tmp_path) == "standup: ship on Friday\n"
    assert (await tools.run("tracker.create_note", note)).ok  # asked again: "allowConversation"
    assert (await tools.run("tracker.create_note", note)).ok  # not asked: allowed in this conversation
    assert len(asked.requests) == 3

    elsewhere = toolbox(servers, consent, asked, conversation="c2")
    assert (await elsewhere.run("tracker.create_note", note)).ok  # another conversation asks: "allowAlways"
    assert (await toolbox(servers, consent, asked, conversation="c3").run("tracker.create_note", note)).ok
    assert len(asked.requests) == 4
    assert len(notes(tmp_path).splitlines()) == 5


async def test_arguments_are_checked_against_the_schema_before_anything_runs(
    servers: McpServers, tmp_path: Path
) -> None:
    await servers.tools(wait_s=30)
    asked = Asked()
    tools = toolbox(servers, Consent(), asked)
    outcome = await tools.run("tracker.create_note", {"title": "standup"})
    assert not outcome.ok
    assert outcome.text == (
        "Error: the arguments to tracker.create_note do not fit its schema: 'body' is a required property "
        "(its arguments are: title, body)"
    )
    wrong = await tools.run("tracker.lookup_ticket", '{"ticket": 12}')  # JSON text, as an engine may pass
    assert not wrong.ok and "['ticket'] 12 is not of type 'string'" in wrong.text
    assert asked.requests == [] and notes(tmp_path) == ""


# --- the configuration ----------------------------------------------------------------------------


def test_the_configurations_users_write_are_read() -> None:
    zed_like = {"db": {"command": "uvx", "args": ["mcp-server-sqlite", "--db", "x.db"], "env": {"A": "1"}}}
    assert parse_servers(zed_like) == (
        McpServerConfig("db", command="uvx", args=("mcp-server-sqlite", "--db", "x.db"), env=(("A", "1"),)),
    )
    assert parse_servers({"docs": {"type": "http", "url": "https://example.com/mcp"}}) == (
        McpServerConfig("docs", url="https://example.com/mcp"),
    )
    assert parse_servers([]) == ()  # an empty table, as some clients encode it
    for bad, said in [
        ({"a b": {"command": "x"}}, "server name"),
        ({"a": {"command": "x", "url": "http://h"}}, "either a command"),
        ({"a": {"command": "x", "args": "y"}}, "args must be a list"),
        ({"a": {"type": "sse", "url": "http://h"}}, "not supported"),
        ({"a": {"url": "ftp://h"}}, "http:// or https://"),
    ]:
        with pytest.raises(McpConfigError, match=said):
            parse_servers(bad)
    value = {"mcpServers": {"db": {"command": "uvx", "env": {"TOKEN": "secret"}}, "x y": {}}}
    merged, warnings = settings.merge(settings.Settings(), value)
    assert merged.mcp_servers == () and len(warnings) == 1 and "secret" not in warnings[0]


def test_a_projects_files_are_read_with_comments_and_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".vscode").mkdir()
    (tmp_path / ".vscode" / "mcp.json").write_text(
        '{\n  // the project\'s tools\n  "servers": {\n    "fs": {"type": "stdio", "command": "npx",'
        ' "args": ["-y", "server-filesystem", "${workspaceFolder}"], "env": {"KEY": "${env:MY_KEY}"},},\n'
        '    "bad": {"command": 3}\n  }\n}\n'
    )
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"tracker": {"command": "tracker-mcp"}}}))
    servers, warnings = project_servers(tmp_path)
    assert [(s.name, s.source) for s in servers] == [("fs", ".vscode/mcp.json"), ("tracker", ".mcp.json")]
    assert len(warnings) == 1 and "bad: command must be a non-empty string" in warnings[0]
    monkeypatch.setenv("MY_KEY", "k-123")
    fs = expand(servers[0], tmp_path)
    assert fs.args == ("-y", "server-filesystem", str(tmp_path)) and fs.env == (("KEY", "k-123"),)
    monkeypatch.delenv("MY_KEY")
    with pytest.raises(McpConfigError, match="MY_KEY is not set"):
        expand(servers[0], tmp_path)


def test_both_settings_are_trusted_only_and_an_untrusted_workspace_sends_no_project_servers() -> None:
    specs = {spec.wire: spec for spec in settings.SPECS}
    assert specs["mcpServers"].trusted_only and specs["mcpServers"].default == {}
    assert specs["mcpWorkspaceServers"].trusted_only and specs["mcpWorkspaceServers"].untrusted is False


# --- over LSP, without a model: what starts in a trusted and an untrusted workspace ---------------


async def _stats_after_opening(project: Path, options: dict[str, Any]) -> dict[str, Any]:
    """A server on no model over stdio: opening a document warms a chat's prompt, which needs the MCP
    tools, so it starts the configured servers. Its stats' `mcp` once the servers had the time."""
    (project / "a.py").write_text("x = 1\n")
    config = ClientServerConfig(server_command=SERVER_COMMAND, client_factory=make_client)
    client = await config.start()
    assert isinstance(client, AssistantClient)
    try:
        await client.initialize_session(
            initialize_params(
                project, {"model": str(project / "no-model.gguf"), "codebaseIndex": False, **options}
            )
        )
        open_document(client, project / "a.py")
        deadline = time.monotonic() + 20
        while True:
            stats = await client.request(protocol.STATS, {})
            running = [s for s in stats["mcp"]["servers"] if s["state"] in ("running", "failed")]
            if running or time.monotonic() > deadline or not stats["mcp"]["servers"]:
                if not stats["mcp"]["servers"]:
                    await asyncio.sleep(2)  # time enough for a start that should not happen
                    stats = await client.request(protocol.STATS, {})
                return dict(stats["mcp"])
            await asyncio.sleep(0.1)
    finally:
        await client.shutdown_session()
        await client.stop()


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"tracker": tracker_entry(tmp_path)}}))
    return project


async def test_a_trusted_workspace_starts_its_projects_servers(tmp_path: Path) -> None:
    mcp = await _stats_after_opening(_project(tmp_path), {})
    assert mcp["servers"] == [
        {"name": "tracker", "source": ".mcp.json", "state": "running", "tools": 7, "starts": 1, "error": None}
    ]
    assert mcp["offered"][0] == "tracker.lookup_ticket" and mcp["leftOut"] == []
    assert starts(tmp_path) == 1


async def test_nothing_starts_in_an_untrusted_workspace(tmp_path: Path) -> None:
    # What VS Code sends from Restricted Mode, and Neovim for a folder not trusted (trust.lua).
    untrusted = {"mcpServers": {}, "mcpWorkspaceServers": False}
    mcp = await _stats_after_opening(_project(tmp_path), untrusted)
    assert mcp == {"servers": [], "offered": [], "leftOut": []}
    assert starts(tmp_path) == 0


# --- chat on the test model ------------------------------------------------------------------------

NOTES_DIR = Path(tempfile.mkdtemp(prefix="llama-lsp-mcp-"))


@pytest.fixture(scope="module")
def workspace() -> Path:
    """The demo's inventory module and its tests, at the same path every run (same_folder_every_run
    says why; pytest's numbered folders would change the prompt run to run)."""
    root = same_folder_every_run("llama-lsp-test-mcp") / "workspace"
    root.mkdir()
    shutil.copy(ROOT / "examples" / "inventory.py", root / "inventory.py")
    shutil.copy(ROOT / "examples" / "test_inventory.py", root / "test_inventory.py")
    return root


SERVER_OPTIONS = {
    "model": "qwen2.5-coder-0.5b",
    "contextSize": 4096,
    "slots": 2,
    "maxTokens": 160,
    "mcpWorkspaceServers": False,
    "mcpServers": {
        "tracker": {
            "command": sys.executable,
            "args": [str(SCRIPT), "--tools", "lookup_ticket,create_note"],
            "env": {"MCP_TEST_NOTES": str(NOTES_DIR / "notes.txt")},
        },
        "files": {"command": str(FILESYSTEM_SERVER), "args": ["${workspaceFolder}"]},
    },
}


@pytest.mark.asyncio(loop_scope="module")
async def test_chat_calls_an_mcp_tool_and_answers_with_its_result(client: AssistantClient) -> None:
    asked: list[dict[str, Any]] = []
    answer = {"choice": "deny"}  # the first question asks for no note: a small model may try all the same

    @client.feature(protocol.CONFIRM_TOOL_CALL)
    def on_confirm(params: Any) -> dict[str, str]:
        asked.append(protocol.to_plain(params))
        return answer

    result = await client.request(
        protocol.CHAT,
        {"message": "What is the status of ticket ABC-12 in the issue tracker, and who has it?"},
    )
    calls = [(call["name"], call["arguments"]) for call in result["toolCalls"]]
    assert ("tracker.lookup_ticket", {"ticket": "ABC-12"}) in calls, result
    assert "Priya" in result["content"] or "Safari" in result["content"], result["content"]
    assert all(request["tool"] != "lookup_ticket" for request in asked)  # a read-only tool does not ask
    assert not (NOTES_DIR / "notes.txt").exists()  # whatever it tried was denied

    asked.clear()
    answer["choice"] = "allow"
    result = await client.request(
        # Named: asked for "a note", the test model writes the call as fenced JSON without the server's
        # part of the name (`create_note`), which no engine takes for a call of `tracker.create_note`.
        protocol.CHAT,
        {
            "message": "Use tracker.create_note to create a note titled standup with the body: ship 2.4.2 "
            "on Friday."
        },
    )
    calls = [call["name"] for call in result["toolCalls"]]
    assert "tracker.create_note" in calls, result
    assert [(a["server"], a["tool"], a["name"]) for a in asked] == [
        ("tracker", "create_note", "tracker.create_note")
    ]
    assert asked[0]["conversationId"] == result["conversationId"]
    assert "standup" in (NOTES_DIR / "notes.txt").read_text()


@pytest.mark.asyncio(loop_scope="module")
async def test_chat_calls_a_published_servers_tool(client: AssistantClient, workspace: Path) -> None:
    published_filesystem_server()
    result = await client.request(
        protocol.CHAT,
        {"message": f"Call files.list_directory with the path {workspace}."},
    )
    calls = [(call["name"], call["result"]) for call in result["toolCalls"]]
    assert any(name == "files.list_directory" and "inventory.py" in answer for name, answer in calls), result
    stats = await client.request(protocol.STATS, {})
    assert "files.list_directory" in stats["mcp"]["offered"]  # the latest conversation's tools
    assert "tracker.lookup_ticket" not in stats["mcp"]["offered"]  # nothing in the question asks for it


# --- the openings read ahead with MCP tools (the test model) ---------------------------------------


async def test_a_question_that_names_a_server_reads_only_itself_once_its_opening_is_read_ahead(
    tmp_path: Path, workspace: Path
) -> None:
    """Issue 43's goal: once the servers have started, the first token of a chat with MCP configured
    comes no later than without. The warming reads the opening a question naming the tracker gets (its
    tools whole) into a slot of its own, beside the one without MCP tools; such a question, and one
    that names no server, then read only themselves."""
    project = tmp_path / "project"
    shutil.copytree(workspace, project)
    options = {
        "model": "qwen2.5-coder-0.5b",
        "contextSize": 4096,
        "slots": 3,  # one for a conversation, one for the opening without MCP tools, one with
        "maxTokens": 8,  # one step: what the first model request read is measured, not the answer
        "codebaseIndex": False,
        "mcpWorkspaceServers": False,
        "cacheDir": str(tmp_path / "cache"),
        "mcpServers": {"tracker": tracker_entry(tmp_path, "--tools", "lookup_ticket,create_note")},
    }
    config = ClientServerConfig(server_command=SERVER_COMMAND, client_factory=make_client)
    client = await config.start()
    assert isinstance(client, AssistantClient)
    try:
        await client.initialize_session(initialize_params(project, options))
        uri = open_document(client, project / "inventory.py")
        await wait_until_warm(client, uri)
        slots = (await client.request(protocol.STATS, {}))["engine"]["slots"]
        held = {slot["key"]: slot["n_tokens"] for slot in slots}
        without, with_tools = held[f"document:{uri}"], held[f"document:{uri}#mcp:tracker"]
        assert with_tools > without + 100, held  # the tracker's two tools' schemas and the folder
        for question in ("Which tickets are open in the tracker?", "What does Inventory.value return?"):
            result = await client.request(protocol.CHAT, {"textDocument": {"uri": uri}, "message": question})
            stats = result["stats"]
            assert stats["steps"] == 1 and stats["nEvaluated"] < 40, (question, stats)
        assert (await client.request(protocol.STATS, {}))["mcp"]["offered"] == []  # the latest: none
    finally:
        await client.shutdown_session()
        await client.stop()


def tracker_entry(tmp_path: Path, *args: str) -> dict[str, Any]:
    """tracker() as an `mcpServers` entry."""
    config = tracker(tmp_path, *args)
    return {"command": config.command, "args": list(config.args), "env": dict(config.env)}
