"""Documents as the editor sees them: URIs, paths, versions, positions, and proposed edits as WorkspaceEdits.

Every lookup of an open document goes through get_document (by URI) or open_document (by path), which
find it however the client percent-encoded its URI; an edit to an open document names it by the URI the
client opened it with. Lines and positions are counted as LSP counts them (lsp_server.lsp.text_document).

This is where plain edits (lsp_server.assistant.tools.proposals.ProposedEdit) become LSP types. Each file's
edits are turned into one TextEdit covering the changed region between the editor's current text and
the text after every proposed edit, tagged with the version of the document they were computed against.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote

from lsprotocol import types
from pygls.uris import from_fs_path
from pygls.workspace import TextDocument, Workspace

from ..assistant.edits import changed_region
from ..assistant.tools.proposals import Proposals, ProposedEdit
from . import protocol
from .text_document import LspDocuments, LspTextDocument, uri_to_path


class StaleDocument(Exception):
    """The document changed after the edit was computed: the edit must not be applied."""


def get_document(workspace: Workspace, uri: str) -> TextDocument | None:
    """The open document a URI names, however the client percent-encoded it; None if it is not open."""
    # pygls files open documents under their percent-decoded URI (Workspace.put_text_document).
    document: TextDocument | None = workspace.text_documents.get(unquote(uri))
    return document


def open_document(workspace: Workspace, path: Path) -> TextDocument | None:
    """The open document of a file, if any (LspDocuments.document_at)."""
    if isinstance(workspace, LspDocuments):
        return workspace.document_at(path)
    return next((d for d in workspace.text_documents.values() if uri_to_path(d.uri) == path), None)


def workspace_roots(workspace: Workspace, uri: str | None = None) -> list[Path]:
    """The folders the tools work in: the workspace folders, else the root folder, else the folder of the
    document `uri` is about, since an editor opened on a single file sends no folder at all."""
    roots = [uri_to_path(folder.uri) for folder in workspace.folders.values()]
    if not roots and workspace.root_uri:
        roots = [uri_to_path(workspace.root_uri)]
    if not roots and uri is not None:
        document_path = uri_to_path(uri)
        roots = [document_path.parent] if document_path is not None else []
    return [root for root in roots if root is not None]


def shown_name(workspace: Workspace, path: Path | None) -> tuple[str, str]:
    """A file's path as prompts name it (relative to its workspace folder), and that folder's name."""
    if path is None:
        return "", ""
    for root in workspace_roots(workspace):
        if path.is_relative_to(root):
            return path.relative_to(root).as_posix(), root.name
    return path.name, ""


def open_text(workspace: Workspace, path: Path) -> str | None:
    document = open_document(workspace, path)
    return document.source if document is not None else None


def selection_text(document: TextDocument, selection: protocol.Range) -> str:
    start, end = selection.start, selection.end
    return document.text_in_client_range(
        types.Range(types.Position(start.line, start.character), types.Position(end.line, end.character))
    )


def workspace_edit(workspace: Workspace, proposals: Proposals) -> types.WorkspaceEdit | None:
    """The proposed edits as versioned TextDocumentEdits (and CreateFiles), or None.

    Raises StaleDocument when a file's text is no longer the one its edits were computed against.
    """
    changes: list[types.TextDocumentEdit | types.CreateFile] = []
    seen: set[Path] = set()
    for proposed in proposals.edits:
        if proposed.path in seen:
            continue
        seen.add(proposed.path)
        changes.extend(_file_changes(workspace, proposals, proposed))
    return types.WorkspaceEdit(document_changes=changes) if changes else None


def _file_changes(
    workspace: Workspace, proposals: Proposals, proposed: ProposedEdit
) -> list[types.TextDocumentEdit | types.CreateFile]:
    disk_uri = from_fs_path(str(proposed.path)) or proposed.path.as_uri()
    after = proposals.text_after_edits(proposed.path)
    if proposed.old_text is None:  # a new file
        return [
            types.CreateFile(
                uri=disk_uri, options=types.CreateFileOptions(overwrite=False, ignore_if_exists=False)
            ),
            types.TextDocumentEdit(
                text_document=types.OptionalVersionedTextDocumentIdentifier(uri=disk_uri, version=None),
                edits=[
                    types.TextEdit(
                        range=types.Range(types.Position(0, 0), types.Position(0, 0)), new_text=after
                    )
                ],
            ),
        ]
    document = open_document(workspace, proposed.path)
    if document is None:  # not open: the edit is computed against the disk, which has no version
        document = LspTextDocument(
            disk_uri,
            source=proposed.path.read_text(encoding="utf-8"),
            position_codec=workspace.position_codec,
        )
    before = document.source
    if before != proposals.original_text(proposed.path):
        # Diffing the editor's newer text against the edit would undo what the user typed meanwhile.
        raise StaleDocument(f"{proposed.path.name} changed while the edit was being written; run it again")
    start, end, replacement = changed_region(before, after)
    edit_range = types.Range(
        document.client_position_at_offset(start), document.client_position_at_offset(end)
    )
    return [
        types.TextDocumentEdit(
            # An open document keeps the URI the client opened it with: the client knows it by that one.
            text_document=types.OptionalVersionedTextDocumentIdentifier(
                uri=document.uri, version=document.version
            ),
            edits=[types.TextEdit(range=edit_range, new_text=replacement)],
        )
    ]


def check_versions(workspace: Workspace, edit: types.WorkspaceEdit) -> None:
    """Raises StaleDocument if any edited document moved on since the edit was computed."""
    for change in edit.document_changes or []:
        if not isinstance(change, types.TextDocumentEdit) or change.text_document.version is None:
            continue
        current = get_document(workspace, change.text_document.uri)
        if current is None or current.version != change.text_document.version:
            raise StaleDocument(
                f"{change.text_document.uri} changed (version {change.text_document.version} -> "
                f"{current.version if current else 'closed'}) while the edit was being written; run it again"
            )
