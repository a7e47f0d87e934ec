"""Documents as the editor sees them: encoded URIs, editors opened without a folder, and LSP line counting.

The unit tests use the real document model (pygls's Workspace as the server builds it) and the real
tools; the stdio tests drive the server on the tiny model, where only "it answers" matters.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.workspace import TextDocument, Workspace

from lsp_server.assistant import edits
from lsp_server.assistant.tools.runner import ToolRunner
from lsp_server.assistant.tools.workspace_files import WorkspaceFiles
from lsp_server.lsp import documents, protocol
from lsp_server.lsp.server import create_server
from lsp_server.lsp.text_document import LspDocuments, LspTextDocument, split_lines

from .lsp_client import SERVER_COMMAND, AssistantClient, initialize_params, make_client

stdio = pytest.mark.asyncio(loop_scope="module")  # the stdio tests share one event loop with their servers

# Spellings editors send: VS Code percent-encodes all of these, the drive colon included.
ENCODED_NAMES = {
    "my%20f.py": "my f.py",
    "caf%C3%A9.py": "café.py",
    "a+b.py": "a+b.py",
    "c%2Bd.py": "c+d.py",
    "x%23y.py": "x#y.py",
    "100%25.py": "100%.py",
}
VSCODE_DRIVE_URI = "file:///c%3A/Users/me/project/main.py"
NOT_LINE_ENDINGS = ["\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]


def new_workspace(root: Path | None = None, encoding: str = types.PositionEncodingKind.Utf16) -> LspDocuments:
    """The workspace as the server has it after `initialize`: pygls's, replaced by ours."""
    folders = [types.WorkspaceFolder(uri=root.as_uri(), name=root.name)] if root else None
    return LspDocuments.replacing(
        Workspace(root.as_uri() if root else None, workspace_folders=folders, position_encoding=encoding)
    )


def open_in(workspace: Workspace, uri: str, text: str, version: int = 1) -> TextDocument:
    workspace.put_text_document(
        types.TextDocumentItem(uri=uri, language_id="python", version=version, text=text)
    )
    document = documents.get_document(workspace, uri)
    assert document is not None
    return document


def change(workspace: Workspace, uri: str, start: tuple[int, int], end: tuple[int, int], text: str) -> None:
    """An incremental didChange, applied the way the server applies it."""
    workspace.update_text_document(
        types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        types.TextDocumentContentChangePartial(
            range=types.Range(types.Position(*start), types.Position(*end)), text=text
        ),
    )


def tool_runner(workspace: Workspace, roots: list[Path]) -> ToolRunner:
    return ToolRunner(WorkspaceFiles(roots, open_text=lambda path: documents.open_text(workspace, path)))


# ---- a reference editor: the specification read literally, on UTF-16 code units ---------------------

CR, LF = 0x0D, 0x0A


def utf16(text: str) -> list[int]:
    data = text.encode("utf-16-le")
    return [int.from_bytes(data[i : i + 2], "little") for i in range(0, len(data), 2)]


def from_utf16(units: list[int]) -> str:
    return b"".join(unit.to_bytes(2, "little") for unit in units).decode("utf-16-le")


def line_end(units: list[int], start: int) -> int:
    while start < len(units) and units[start] not in (CR, LF):
        start += 1
    return start


def after_line_ending(units: list[int], end: int) -> int:
    return end + 2 if units[end] == CR and end + 1 < len(units) and units[end + 1] == LF else end + 1


def reference_offset(units: list[int], position: types.Position) -> int:
    """Where a position falls: lines end at \\n, \\r\\n or \\r; past a line's end is its end; past the
    last line is the end of the text; inside a surrogate pair is after it (the text cannot split there)."""
    start = 0
    for _ in range(position.line):
        end = line_end(units, start)
        if end == len(units):
            return len(units)
        start = after_line_ending(units, end)
    end = line_end(units, start)
    offset = min(start + position.character, end)
    if offset < end and 0xDC00 <= units[offset] <= 0xDFFF:
        offset += 1
    return offset


def reference_position(units: list[int], offset: int) -> types.Position:
    """The position of a code-unit offset; inside a \\r\\n it is the end of the line."""
    line, start = 0, 0
    while True:
        end = line_end(units, start)
        if offset <= end or end == len(units):
            return types.Position(line, min(offset, end) - start)
        if offset < after_line_ending(units, end):
            return types.Position(line, end - start)
        line, start = line + 1, after_line_ending(units, end)


def reference_apply(text: str, edit: types.TextEdit) -> str:
    units = utf16(text)
    start, end = sorted((reference_offset(units, edit.range.start), reference_offset(units, edit.range.end)))
    return from_utf16(units[:start] + utf16(edit.new_text) + units[end:])


def apply_as_editor(text: str, edit: types.WorkspaceEdit) -> str:
    (file_change,) = edit.document_changes or []
    assert isinstance(file_change, types.TextDocumentEdit)
    for text_edit in file_change.edits:
        assert isinstance(text_edit, types.TextEdit)
        text = reference_apply(text, text_edit)
    return text


# ---- 1. percent-encoded URIs ---------------------------------------------------------------------


@pytest.mark.parametrize("encoded", [*ENCODED_NAMES, "sub%20dir/%C3%A9t%C3%A9%20%2B%23.py"])
def test_a_document_opened_with_an_encoded_uri_is_found_by_that_uri_and_by_its_path(encoded: str):
    workspace = new_workspace()
    uri = f"file:///t/{encoded}"
    open_in(workspace, uri, "x = 1\n")
    document = documents.get_document(workspace, uri)
    assert document is not None and document.uri == uri  # kept as the client spelled it
    path = documents.uri_to_path(uri)
    assert path is not None and path.name == ENCODED_NAMES.get(encoded, "été +#.py")
    assert documents.open_document(workspace, path) is document
    assert documents.get_document(workspace, "file:///t/other.py") is None


def test_a_document_is_found_by_path_only_while_it_is_open():
    workspace = new_workspace()
    first, second = "file:///t/a%20b.py", "file:///t/c.py"
    open_in(workspace, first, "a = 1\n")
    assert documents.open_document(workspace, Path("/t/a b.py")) is documents.get_document(workspace, first)
    assert documents.open_document(workspace, Path("/t/c.py")) is None
    open_in(workspace, second, "c = 1\n")  # opened after the first lookup built the index
    assert documents.open_document(workspace, Path("/t/c.py")) is documents.get_document(workspace, second)
    workspace.remove_text_document(first)
    assert documents.open_document(workspace, Path("/t/a b.py")) is None


def test_uri_to_path_decodes_every_escape():
    assert documents.uri_to_path("file:///t/my%20f.py") == Path("/t/my f.py")
    assert documents.uri_to_path("file:///t/caf%C3%A9.py") == Path("/t/café.py")
    assert documents.uri_to_path("file:///t/a+b.py") == Path("/t/a+b.py")
    assert documents.uri_to_path("file:///t/x%23y.py") == Path("/t/x#y.py")
    assert documents.uri_to_path("file:///t/100%25.py") == Path("/t/100%.py")
    assert documents.uri_to_path("untitled:Untitled-1") is None


def test_a_vscode_drive_uri_is_found_and_names_an_absolute_path():
    workspace = new_workspace()
    document = open_in(workspace, VSCODE_DRIVE_URI, "x = 1\n")
    path = documents.uri_to_path(VSCODE_DRIVE_URI)
    assert path is not None and path.is_absolute()  # on Linux `/c:/...`, not the relative `c:/...`
    assert documents.open_document(workspace, path) is document


def test_an_edit_to_an_open_document_names_it_by_the_uri_the_client_sent(tmp_path: Path):
    path = tmp_path / "my dir" / "café +#%.py"
    path.parent.mkdir()
    path.write_text("def f():\n    return 1\n")
    uri = "file://" + quote(path.as_posix(), safe="/")  # as VS Code spells it: every escape it can
    assert "%20" in uri and "%23" in uri and "%25" in uri and "%2B" in uri
    workspace = new_workspace(tmp_path)
    open_in(workspace, uri, path.read_text(), version=7)
    runner = tool_runner(workspace, [tmp_path])
    result = runner.run(
        "edit", {"path": "my dir/café +#%.py", "old_text": "return 1", "new_text": "return 2"}
    ).text
    assert result.startswith("Proposed"), result
    edit = documents.workspace_edit(workspace, runner.proposals)
    assert edit is not None
    (file_change,) = edit.document_changes or []
    assert isinstance(file_change, types.TextDocumentEdit)
    assert (file_change.text_document.uri, file_change.text_document.version) == (uri, 7)
    documents.check_versions(workspace, edit)  # finds the document by that URI: not stale
    change(workspace, uri, (0, 0), (0, 0), "# typed\n")
    with pytest.raises(documents.StaleDocument):
        documents.check_versions(workspace, edit)


# ---- 2. no workspace folder ----------------------------------------------------------------------


def test_without_a_folder_the_tools_work_in_the_folder_of_the_document(tmp_path: Path):
    path = tmp_path / "alone.py"
    path.write_text("def f():\n    return 1\n")
    workspace = new_workspace()  # rootUri and workspaceFolders null: an editor opened on one file
    open_in(workspace, path.as_uri(), path.read_text())
    assert documents.workspace_roots(workspace) == []
    roots = documents.workspace_roots(workspace, path.as_uri())
    assert roots == [tmp_path]
    sandbox = WorkspaceFiles(roots)
    assert sandbox.display(path) == "alone.py" and sandbox.resolve("alone.py") == path
    runner = tool_runner(workspace, roots)
    assert runner.run("read_file", {"path": "alone.py"}).text.startswith("alone.py (lines 1-2 of 2)")
    assert runner.run(
        "edit", {"path": "alone.py", "old_text": "return 1", "new_text": "return 2"}
    ).text.startswith("Proposed")
    edit = documents.workspace_edit(workspace, runner.proposals)
    assert edit is not None and apply_as_editor(path.read_text(), edit) == "def f():\n    return 2\n"


def test_with_no_folder_and_no_document_the_tools_say_no_folder_is_open():
    runner = ToolRunner(WorkspaceFiles([]))
    for tool, arguments in [
        ("read_file", {"path": "x.py"}),
        ("create_file", {"path": "x.py", "content": ""}),
    ]:
        result = runner.run(tool, arguments).text
        assert result.startswith("Error:") and "no folder is open" in result, result
    assert runner.run("search", {}).text == "No matches: the workspace has no files."
    assert runner.proposals.edits == []


def test_the_shown_path_of_a_file_resolves_back_to_it_in_every_folder(tmp_path: Path):
    """One function shows paths; before, a file in a second folder was shown relative to that folder
    while relative paths resolve against the first."""
    first, second = tmp_path / "first", tmp_path / "second"
    for folder in (first, second):
        (folder / "pkg").mkdir(parents=True)
        (folder / "pkg" / "mod.py").write_text("x = 1\n")
    sandbox = WorkspaceFiles([first, second])
    for path in (first / "pkg" / "mod.py", second / "pkg" / "mod.py"):
        assert sandbox.resolve(sandbox.display(path)) == path
    # With several folders, a path starts with its folder's name.
    assert sandbox.display(second / "pkg" / "mod.py") == "second/pkg/mod.py"
    assert sandbox.display(first / "pkg" / "mod.py") == "first/pkg/mod.py"
    # A model that leaves the folder's name out still names the file that exists.
    (second / "only.py").write_text("y = 2\n")
    assert sandbox.resolve("only.py") == second / "only.py"


def test_two_folders_of_one_name_are_told_apart(tmp_path: Path):
    first, second = tmp_path / "a" / "app", tmp_path / "b" / "app"
    for folder in (first, second):
        folder.mkdir(parents=True)
    sandbox = WorkspaceFiles([first, second])
    assert sandbox.display(second / "x.py") == "app-2/x.py"
    assert sandbox.resolve("app-2/x.py") == second / "x.py" and sandbox.resolve("app/x.py") == first / "x.py"


def test_a_document_outside_every_folder_is_shown_absolute_and_editable_in_place(tmp_path: Path):
    folder, outside = tmp_path / "project", tmp_path / "notes.py"
    folder.mkdir()
    outside.write_text("a = 1\n")
    sandbox = WorkspaceFiles([folder], documents=[outside])
    assert sandbox.display(outside) == outside.as_posix() and sandbox.resolve(outside.as_posix()) == outside
    runner = ToolRunner(sandbox)
    edited = runner.run("edit", {"path": outside.as_posix(), "old_text": "a = 1", "new_text": "a = 2"})
    assert edited.proposed, edited.text
    # Only that file: its neighbours stay outside.
    (tmp_path / "secret.txt").write_text("s")
    assert "outside the workspace" in runner.run("read_file", {"path": str(tmp_path / "secret.txt")}).text


def test_initialize_gives_the_server_the_lsp_document_model_and_keeps_the_folders(tmp_path: Path):
    server = create_server()
    params = initialize_params(tmp_path, {})
    params.capabilities.general = types.GeneralClientCapabilities(
        position_encodings=[types.PositionEncodingKind.Utf8]
    )
    steps = server.protocol.lsp_initialize(params)  # pygls's own initialize, then our handler
    handler, arguments, _ = next(steps)
    handler(*arguments)
    assert isinstance(server.workspace, LspDocuments)
    assert documents.workspace_roots(server.workspace) == [tmp_path]
    assert server.workspace.position_encoding == types.PositionEncodingKind.Utf8
    server.workspace.put_text_document(
        types.TextDocumentItem(uri="file:///t/a.py", language_id="python", version=1, text="é")
    )
    assert isinstance(documents.get_document(server.workspace, "file:///t/a.py"), LspTextDocument)
    with pytest.raises(ValueError):
        LspDocuments.replacing(server.workspace)  # too late once documents are open


# ---- 3. lines and positions as LSP counts them -------------------------------------------------------


@pytest.mark.parametrize("character", NOT_LINE_ENDINGS, ids=[hex(ord(c)) for c in NOT_LINE_ENDINGS])
def test_only_lf_crlf_and_cr_end_lines(character: str):
    text = f"a{character}b\nc\r\nd\re"
    assert split_lines(text) == [f"a{character}b\n", "c\r\n", "d\r", "e"]
    document = LspTextDocument("file:///t/x.py", text)
    assert document.lines == tuple(split_lines(text))
    assert document.offset_at_position(types.Position(1, 0)) == text.index("c")
    assert document.client_position_at_offset(text.index("e")) == types.Position(3, 0)


def test_split_lines_keeps_ends_and_has_no_empty_last_line():
    assert split_lines("") == []
    assert split_lines("a\n") == ["a\n"]
    assert split_lines("\r\r\n\n") == ["\r", "\r\n", "\n"]
    assert split_lines("a\n\nb") == ["a\n", "\n", "b"]


def test_pygls_still_splits_lines_as_python_does():
    """When this fails, pygls has fixed its line splitting: see docs/upstream-pygls.md on dropping ours."""
    assert len(TextDocument("file:///t/x.py", "a\x0cb").lines) == 2


def test_an_edit_after_a_form_feed_lands_on_the_editors_line(tmp_path: Path):
    path = tmp_path / "ff.py"
    text = "a = 1\n\x0c\nb = 2\n"
    workspace = new_workspace(tmp_path)
    open_in(workspace, path.as_uri(), text)
    runner = tool_runner(workspace, [tmp_path])
    assert runner.run("edit", {"path": "ff.py", "old_text": "b = 2", "new_text": "b = 3"}).text.startswith(
        "Proposed"
    )
    edit = documents.workspace_edit(workspace, runner.proposals)
    assert edit is not None
    (file_change,) = edit.document_changes or []
    assert isinstance(file_change, types.TextDocumentEdit)
    assert file_change.edits[0].range == types.Range(types.Position(2, 4), types.Position(2, 5))
    assert apply_as_editor(text, edit) == "a = 1\n\x0c\nb = 3\n"


@pytest.mark.parametrize(
    ("text", "start", "end", "inserted", "expected"),
    [
        ("abc", (0, 10), (0, 10), "X", "abcX"),  # past the end of the last line: its end
        ("abc\r\ndef", (0, 4), (0, 4), "X", "abcX\r\ndef"),  # never between \r and \n
        ("abc\r\ndef", (0, 3), (0, 99), "X", "abcX\r\ndef"),
        ("abc\rdef", (0, 9), (1, 1), "", "abcef"),  # a lone \r ends a line
        ("abc\ndef", (7, 0), (9, 9), "!", "abc\ndef!"),  # past the last line: the end of the document
        ("abc\n", (1, 0), (1, 5), "d", "abc\nd"),  # the empty line after the last line ending
        ("a\x0cb\nc", (0, 1), (0, 2), "", "ab\nc"),  # a form feed is a character, not a line ending
        ("a\x0cb\nc", (1, 0), (1, 1), "", "a\x0cb\n"),
        ("a\u2028b\nc", (1, 0), (1, 1), "C", "a\u2028b\nC"),
        ("x😋y\nz", (0, 10), (0, 10), "!", "x😋y!\nz"),  # UTF-16: the emoji is two units
        ("x😋y\nz", (0, 3), (0, 4), "", "x😋\nz"),
        ("x😋y\nz", (0, 2), (0, 2), "|", "x😋|y\nz"),  # inside the surrogate pair: after the emoji
        ("\r\n\r\n", (1, 1), (1, 1), "X", "\r\nX\r\n"),
    ],
)
def test_incremental_changes_follow_the_specification(text, start, end, inserted, expected):
    workspace = new_workspace()
    document = open_in(workspace, "file:///t/x.py", text)
    change(workspace, "file:///t/x.py", start, end, inserted)
    assert document.source == expected
    assert document.version == 2


def test_positions_count_the_negotiated_units():
    text = "é😋x\n"
    for encoding, end_of_line in [
        (types.PositionEncodingKind.Utf8, 7),
        (types.PositionEncodingKind.Utf16, 4),
        (types.PositionEncodingKind.Utf32, 3),
    ]:
        workspace = new_workspace(encoding=encoding)
        document = open_in(workspace, "file:///t/x.py", text)
        assert document.client_position_at_offset(3) == types.Position(0, end_of_line)
        assert document.offset_at_position(types.Position(0, end_of_line)) == 3
        assert document.offset_at_position(types.Position(0, end_of_line + 5)) == 3
        assert document.client_position_at_offset(len(text)) == types.Position(1, 0)


def test_offsets_become_positions_on_existing_lines_only():
    document = LspTextDocument("file:///t/x.py", "ab\r\ncd")
    assert document.client_position_at_offset(3) == types.Position(0, 2)  # between \r and \n: the line end
    assert document.client_position_at_offset(6) == types.Position(1, 2)  # the end, no line ending after it
    assert document.client_position_at_offset(99) == types.Position(1, 2)
    assert document.position_to_client_units(types.Position(0, 9)) == types.Position(0, 2)
    assert document.position_to_client_units(types.Position(5, 0)) == types.Position(1, 2)
    client_position = types.Position(0, 50)
    assert document.position_from_client_units(client_position).character == 2
    assert client_position.character == 50  # the request's position is left as it came


def test_a_selection_is_quoted_from_the_editors_lines():
    document = LspTextDocument("file:///t/x.py", "a\x0cb\r\nc\u2028d\re")
    selection = protocol.Range(protocol.Position(1, 0), protocol.Position(2, 99))
    assert documents.selection_text(document, selection) == "c\u2028d\re"


@pytest.mark.parametrize(
    ("before", "after"),
    [("a\r\nb", "a\nb"), ("a\nb", "a\r\nb"), ("a\r\nb", "a\rX\nb"), ("x\r\ny\r\n", "x\r\nz\r\n")],
)
def test_a_changed_region_never_starts_or_ends_inside_crlf(before: str, after: str):
    start, end, replacement = edits.changed_region(before, after)
    assert before[:start] + replacement + before[end:] == after
    for offset in (start, end):
        assert not (0 < offset < len(before) and before[offset - 1 : offset + 1] == "\r\n")
    document = LspTextDocument("file:///t/x.py", before)
    text_edit = types.TextEdit(
        types.Range(document.client_position_at_offset(start), document.client_position_at_offset(end)),
        replacement,
    )
    assert reference_apply(before, text_edit) == after


def test_an_edit_to_a_crlf_document_with_emoji_applies_in_the_editor(tmp_path: Path):
    text = "s = '😋😋'\r\nt = 1\r\n\x0c\r\nu = 2\r\n"
    workspace = new_workspace(tmp_path)
    open_in(workspace, (tmp_path / "e.py").as_uri(), text)
    runner = tool_runner(workspace, [tmp_path])
    assert runner.run("edit", {"path": "e.py", "old_text": "u = 2", "new_text": "u = '😋'"}).text.startswith(
        "Proposed"
    )
    edit = documents.workspace_edit(workspace, runner.proposals)
    assert edit is not None
    assert apply_as_editor(text, edit) == runner.proposals.text_after_edits(tmp_path / "e.py")


PIECES = ["a", "b", " ", "\n", "\r", "\r\n", "\x0c", "\x0b", "\x85", "\u2028", "é", "😋"]


def random_text(rng: random.Random, longest: int) -> str:
    return "".join(rng.choice(PIECES) for _ in range(rng.randint(0, longest)))


def test_two_hundred_random_edits_match_the_reference_editor():
    rng = random.Random(1729)
    workspace = new_workspace()
    text = random_text(rng, 40)
    document = open_in(workspace, "file:///t/random.py", text)
    for step in range(200):
        units = utf16(text)
        n_lines = len(split_lines(text)) + 1
        positions = [types.Position(rng.randint(0, n_lines + 1), rng.randint(0, 14)) for _ in range(2)]
        start, end = sorted(positions, key=lambda p: reference_offset(units, p))
        inserted = random_text(rng, 5)
        change(workspace, document.uri, (start.line, start.character), (end.line, end.character), inserted)
        text = reference_apply(text, types.TextEdit(types.Range(start, end), inserted))
        assert document.source == text, f"step {step}: {start}-{end} {inserted!r}"
        offset = rng.randint(0, len(text))
        expected = reference_position(utf16(text), len(utf16(text[:offset])))
        assert document.client_position_at_offset(offset) == expected, f"step {step}: offset {offset}"
        assert document.offset_at_position(expected) <= offset


# ---- over stdio: the repros, on the tiny model -------------------------------------------------------

TINY_OPTIONS = {"contextSize": 2048, "slots": 2, "maxTokens": 4, "maxToolSteps": 1}


async def start_server(client: AssistantClient, params: types.InitializeParams) -> None:
    client.server_info = await client.initialize_session(params)
    await client.wait_for_status(protocol.READY, timeout=120)


@pytest_lsp.fixture(
    config=pytest_lsp.ClientServerConfig(server_command=SERVER_COMMAND, client_factory=make_client),
    scope="module",
)
async def folder_client(
    lsp_client: AssistantClient, tiny_model: Path, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[AssistantClient]:
    root = tmp_path_factory.mktemp("encoded")
    options = {**TINY_OPTIONS, "model": str(tiny_model), "cacheDir": str(tmp_path_factory.mktemp("cache"))}
    await start_server(lsp_client, initialize_params(root, options))
    lsp_client.root = root  # type: ignore[attr-defined]
    yield lsp_client
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(
    config=pytest_lsp.ClientServerConfig(server_command=SERVER_COMMAND, client_factory=make_client),
    scope="module",
)
async def folderless_client(
    lsp_client: AssistantClient, tiny_model: Path, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[AssistantClient]:
    options = {**TINY_OPTIONS, "model": str(tiny_model), "cacheDir": str(tmp_path_factory.mktemp("cache"))}
    params = initialize_params(tmp_path_factory.mktemp("unused"), options)
    params.root_uri, params.workspace_folders = None, None  # an editor opened on a single file
    await start_server(lsp_client, params)
    yield lsp_client
    await lsp_client.shutdown_session()


def did_open(client: AssistantClient, uri: str, text: str) -> None:
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)
        )
    )


async def code_actions(client: AssistantClient, uri: str) -> list[types.CodeAction]:
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(types.Position(0, 0), types.Position(1, 0)),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    return [action for action in actions or [] if isinstance(action, types.CodeAction)]


async def assert_answers(client: AssistantClient, uri: str) -> None:
    actions = await code_actions(client, uri)
    assert {action.title for action in actions} >= {"Llama: Explain", "Llama: Document"}
    assert all(action.data["uri"] == uri for action in actions)  # type: ignore[index]
    result: dict[str, Any] = await client.request(
        protocol.CHAT, {"textDocument": {"uri": uri}, "message": "What is x?"}
    )
    assert result["finishReason"] in ("stop", "length") and result["stats"]["nGenerated"] > 0


@stdio
@pytest.mark.parametrize("encoded", [*ENCODED_NAMES, "vscode-drive"])
async def test_documents_with_encoded_uris_get_code_actions_and_chat_answers(
    folder_client: AssistantClient, encoded: str
):
    root: Path = folder_client.root  # type: ignore[attr-defined]
    if encoded == "vscode-drive":
        uri = VSCODE_DRIVE_URI  # no such file on this system: the open document is all there is
    else:
        (root / ENCODED_NAMES[encoded]).write_text("x = 1\n")
        uri = root.as_uri() + "/" + encoded
    did_open(folder_client, uri, "x = 1\n")
    await assert_answers(folder_client, uri)


@stdio
async def test_a_document_that_was_never_opened_is_still_unknown(folder_client: AssistantClient):
    with pytest.raises(JsonRpcException) as error:
        await folder_client.request(
            protocol.CHAT, {"textDocument": {"uri": "file:///t/never%20opened.py"}, "message": "hi"}
        )
    assert error.value.code == -32602 and "didOpen" in error.value.message


@stdio
async def test_without_a_folder_chat_and_code_actions_answer(
    folderless_client: AssistantClient, tmp_path_factory: pytest.TempPathFactory
):
    path = tmp_path_factory.mktemp("single file") / "alone.py"
    path.write_text("def double(x):\n    return x * 2\n")
    uri = "file://" + quote(path.as_posix(), safe="/")
    did_open(folderless_client, uri, path.read_text())
    await assert_answers(folderless_client, uri)
    explain = next(a for a in await code_actions(folderless_client, uri) if a.title == "Llama: Explain")
    resolved = await folderless_client.code_action_resolve_async(explain)
    assert resolved.command is not None and resolved.command.arguments
    no_document = await folderless_client.request(protocol.CHAT, {"message": "Which files are there?"})
    assert no_document["finishReason"] in ("stop", "length")
