"""The document model: pygls's TextDocument and Workspace, made to count lines and positions as LSP does.

pygls 2.1.1 splits lines with str.splitlines, which also breaks on \\v, \\f, \\x1c-\\x1e, \\x85, \\u2028 and
\\u2029, and moves a character past the end of a line to one before its end; either puts the server's copy
of a document out of step with the editor's, and edits land on the wrong line (docs/upstream-pygls.md).
Here, as the specification says, the only line endings are \\n, \\r\\n and \\r, a character past the end of
a line means the end of that line (before its line ending), and a line past the last means the end of the
document. Characters are counted in the units the client negotiated, through pygls's PositionCodec.

Every conversion goes through offsets into the text, so there is one place that reads a position.
"""

from __future__ import annotations

import bisect
import logging
import re
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import unquote

from lsprotocol import types
from pygls import IS_WIN
from pygls.uris import to_fs_path, urlparse
from pygls.workspace import TextDocument, Workspace
from pygls.workspace.position_codec import ServerTextPosition, ServerTextRange

from ..assistant.edits import split_lines

log = logging.getLogger("llama_lsp.text_document")

_LINE_ENDING = re.compile(r"\r\n|\r|\n")


def uri_to_path(uri: str) -> Path | None:
    """The file a `file:` URI names, percent-decoded; None for other schemes."""
    path = to_fs_path(uri)
    if not path:
        return None
    if not IS_WIN and not path.startswith("/"):
        # pygls reads `file:///c:/x` as the Windows path `c:/x` on every system; elsewhere it is `/c:/x`.
        path = urlparse(uri)[2]
    return Path(path)


class LspTextDocument(TextDocument):
    """An open document whose lines and positions are those of the LSP specification."""

    # The line table of the last source seen: sources are immutable, so identity says it is current.
    _table_source: str | None = None
    _table: tuple[list[int], list[int]] = ([0], [0])

    @property
    def lines(self) -> Sequence[str]:
        return tuple(split_lines(self.source))

    def _line_table(self) -> tuple[list[int], list[int]]:
        """For each line: the offset where it starts, and where its text ends (before its line ending)."""
        source = self.source
        if self._table_source is not source:
            starts, ends = [0], []
            for ending in _LINE_ENDING.finditer(source):
                ends.append(ending.start())
                starts.append(ending.end())
            ends.append(len(source))
            self._table_source, self._table = source, (starts, ends)
        return self._table

    def _code_points(self, line_text: str, client_units: int) -> int:
        """How many characters of a line's text the client's units cover; past the text means all of it.

        A position inside a character that takes several units (half of a UTF-16 surrogate pair) falls
        after that character, as pygls has it: the text cannot be split there.
        """
        counted = 0
        for index, char in enumerate(line_text):
            if counted >= client_units:
                return index
            counted += self.position_codec.client_num_units(char)
        return len(line_text)

    def offset_at_position(self, client_position: types.Position) -> int:
        starts, ends = self._line_table()
        if client_position.line >= len(starts):
            return len(self.source)
        start, end = starts[client_position.line], ends[client_position.line]
        return start + self._code_points(self.source[start:end], client_position.character)

    def offset_at_server_position(self, server_position: ServerTextPosition) -> int:
        starts, ends = self._line_table()
        if server_position.line >= len(starts):
            return len(self.source)
        start, end = starts[server_position.line], ends[server_position.line]
        return start + min(max(server_position.character, 0), end - start)

    def server_position_at_offset(self, offset: int) -> ServerTextPosition:
        starts, ends = self._line_table()
        offset = min(max(offset, 0), len(self.source))
        line = bisect.bisect_right(starts, offset) - 1
        # An offset between the \r and \n of one line ending cannot be a position: it is the line's end.
        return ServerTextPosition(line, min(offset, ends[line]) - starts[line])

    def position_from_client_units(self, position: types.Position) -> ServerTextPosition:
        return self.server_position_at_offset(self.offset_at_position(position))

    def range_from_client_units(self, range: types.Range) -> ServerTextRange:
        return ServerTextRange(
            self.position_from_client_units(range.start), self.position_from_client_units(range.end)
        )

    def position_to_client_units(self, position: ServerTextPosition | types.Position) -> types.Position:
        server_position = self.server_position_at_offset(
            self.offset_at_server_position(ServerTextPosition(position.line, position.character))
        )
        start = self._line_table()[0][server_position.line]
        units = self.position_codec.client_num_units(self.source[start : start + server_position.character])
        return types.Position(server_position.line, units)

    def range_to_client_units(self, range: ServerTextRange | types.Range) -> types.Range:
        return types.Range(
            self.position_to_client_units(range.start), self.position_to_client_units(range.end)
        )

    def _apply_incremental_change(self, change: types.TextDocumentContentChangePartial) -> None:
        source = self.source
        start, end = sorted(
            (self.offset_at_position(change.range.start), self.offset_at_position(change.range.end))
        )
        self._source = source[:start] + change.text + source[end:]


class LspDocuments(Workspace):
    """pygls's Workspace, holding LspTextDocuments, and finding them by path as well as by URI."""

    # The open documents' keys by the file they name, built when first needed after a didOpen or a
    # didClose: the tools look files up by path, once per file they read or search.
    _keys_by_path: dict[Path, str] | None = None

    @classmethod
    def replacing(cls, workspace: Workspace) -> LspDocuments:
        """A workspace with the state of the one pygls built (folders, position encoding, sync kind).

        pygls builds its Workspace in `initialize` and offers no way to choose its document class; this
        takes its place before any document is open.
        """
        if workspace.text_documents:
            raise ValueError("documents are already open: replace the workspace before didOpen")
        replacement = cls.__new__(cls)
        replacement.__dict__.update(vars(workspace))
        return replacement

    def _create_text_document(
        self,
        doc_uri: str,
        source: str | None = None,
        version: int | None = None,
        language_id: str | None = None,
    ) -> TextDocument:
        return LspTextDocument(
            doc_uri,
            source=source,
            version=version,
            language_id=language_id,
            sync_kind=self._sync_kind,
            position_codec=self.position_codec,
        )

    def put_text_document(
        self, text_document: types.TextDocumentItem, notebook_uri: str | None = None
    ) -> None:
        super().put_text_document(text_document, notebook_uri)
        self._keys_by_path = None

    def remove_text_document(self, doc_uri: str) -> None:
        super().remove_text_document(doc_uri)
        self._keys_by_path = None

    def document_at(self, path: Path) -> TextDocument | None:
        """The open document of a file, if any.

        Found by comparing paths rather than by rebuilding a URI: clients spell URIs in ways pygls does
        not (an encoded drive colon, an upper-case drive letter).
        """
        if self._keys_by_path is None:
            self._keys_by_path = {}
            for key, document in self.text_documents.items():
                # The key is the decoded URI, where a `#` in a name would read as a fragment.
                document_path = uri_to_path(document.uri)
                if document_path is not None:
                    self._keys_by_path.setdefault(document_path, key)
        key = self._keys_by_path.get(path)
        return self.text_documents.get(key) if key is not None else None

    def update_text_document(
        self, text_doc: types.VersionedTextDocumentIdentifier, change: types.TextDocumentContentChangeEvent
    ) -> None:
        # A change to a document that is not open is the client's mistake. pygls raises KeyError, which
        # the user would see as "Error in server"; there is nothing to change, so the log says so instead.
        if unquote(text_doc.uri) not in self.text_documents:
            log.warning("ignored a change to %s, which is not open (didOpen first)", text_doc.uri)
            return
        super().update_text_document(text_doc, change)
