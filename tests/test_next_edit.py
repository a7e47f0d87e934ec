"""Next-edit suggestions: the text rules without a model (the history of edits, the prompt, what of an
answer is a suggestion), then `assistant/nextEdit` over stdio on the real test model: a rename followed,
stale versions, a request superseded by an edit, the feedback counted."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from lsp_server.assistant import next_edit
from lsp_server.lsp import protocol

from .lsp_client import AssistantClient

PRICE = """def total_price(items, tax_rate):
    subtotal = sum(item.price for item in items)
    return subtotal * (1 + tax_rate)
"""
RENAMED = PRICE.replace("items, tax_rate", "items, tax")


def history_of(*texts: str, path: str = "price.py") -> next_edit.EditHistory:
    """A history that saw the document opened with the first text, then changed to each of the others."""
    history = next_edit.EditHistory()
    history.opened("uri", path, texts[0])
    for text in texts[1:]:
        history.changed("uri", path, text)
    return history


# ---- the history of edits ----------------------------------------------------------------------------


def test_an_edit_is_kept_as_the_whole_lines_it_changed():
    history = history_of(PRICE, RENAMED)
    [hunk] = history.recent("uri")
    assert (hunk.line, hunk.before, hunk.after) == (
        0,
        "def total_price(items, tax_rate):\n",
        "def total_price(items, tax):\n",
    )


def test_typing_on_the_same_line_is_one_edit_and_an_edit_elsewhere_another():
    typed = [PRICE.replace("tax_rate)", f"tax_rate{', extra'[:n]})", 1) for n in range(1, 8)]
    history = history_of(PRICE, *typed)
    [hunk] = history.recent("uri")
    assert hunk.before == "def total_price(items, tax_rate):\n"
    assert hunk.after == "def total_price(items, tax_rate, extra):\n"
    elsewhere = typed[-1].replace("return subtotal", "return 2 * subtotal")
    history.changed("uri", "price.py", elsewhere)
    assert [h.line for h in history.recent("uri")] == [0, 2]


def test_an_edit_undone_leaves_no_edit():
    history = history_of(PRICE, RENAMED, PRICE)
    assert history.recent("uri") == []


def test_a_paste_of_thousands_of_lines_starts_the_history_again():
    pasted = RENAMED + "".join(f"x{n} = {n}\n" for n in range(5000))
    history = history_of(PRICE, RENAMED, pasted)
    assert history.recent("uri") == []
    document = history.get("uri")
    assert document is not None and document.base == pasted


def test_the_edits_of_other_open_documents_come_in_the_order_they_were_made():
    history = history_of(PRICE, RENAMED)
    history.opened("other", "other.py", "a = 1\n")
    history.changed("other", "other.py", "a = 2\n")
    assert [hunk.path for hunk in history.recent("uri")] == ["price.py", "other.py"]
    history.closed("other")
    assert [hunk.path for hunk in history.recent("uri")] == ["price.py"]


def test_an_edit_within_a_line_is_a_substitution_of_whole_words():
    [hunk] = history_of(PRICE, RENAMED).recent("uri")
    assert next_edit.substitution(hunk) == next_edit.Substitution("tax_rate", "tax", 23)
    [value] = history_of("f(stacklevel=2)\n", "f(stacklevel=3)\n").recent("uri")
    assert next_edit.substitution(value) == next_edit.Substitution("2", "3", 13)
    [added] = history_of("x = f(a)\n", "x = f(a, b)\n").recent("uri")
    assert next_edit.substitution(added) is None  # nothing replaced: an insertion


def test_the_users_substitution_is_made_again_where_the_old_text_stands_next_without_a_model():
    history = history_of(PRICE, RENAMED)
    document = history.get("uri")
    assert document is not None
    edits = next_edit.repeat_substitution(document, history.recent("uri"), RENAMED.index("tax)") + 3)
    assert edits is not None
    assert next_edit.apply_edits(RENAMED, edits) == PRICE.replace("tax_rate", "tax")
    # Accepted, it is the same edit again: nothing is left to replace.
    history.changed("uri", "price.py", next_edit.apply_edits(RENAMED, edits))
    document = history.get("uri")
    assert document is not None
    assert next_edit.repeat_substitution(document, history.recent("uri"), 0) is None


def test_the_next_occurrence_is_after_the_cursor_else_the_nearest_before_it_never_the_users_own():
    before = "a = old\nb = old\nc = old\n"
    history = history_of(before, before.replace("b = old", "b = new"))
    document = history.get("uri")
    assert document is not None
    [edit] = (
        next_edit.repeat_substitution(document, history.recent("uri"), document.text.index("new") + 3) or []
    )
    assert document.text[: edit.start].count("\n") == 2  # line c, after the cursor
    [edit] = next_edit.repeat_substitution(document, history.recent("uri"), len(document.text)) or []
    assert document.text[: edit.start].count("\n") == 2  # the nearest one before it
    only = history_of("x = old\n", "x = new\n")
    document = only.get("uri")
    assert document is not None and next_edit.repeat_substitution(document, only.recent("uri"), 0) is None


def test_an_edit_that_is_no_substitution_is_left_to_the_model():
    before = 'HOST = os.environ["HOST"]\nPORT = os.environ["PORT"]\n'
    after = before.replace('os.environ["HOST"]', 'os.environ.get("HOST")')
    history = history_of(before, after)
    document = history.get("uri")
    assert document is not None
    assert next_edit.repeat_substitution(document, history.recent("uri"), 0) is None
    added = history_of("f(a)\nf(a)\n", "f(a, b)\nf(a)\n")  # an insertion: nothing replaced
    document = added.get("uri")
    assert document is not None and next_edit.repeat_substitution(document, added.recent("uri"), 0) is None


# ---- the prompt ----------------------------------------------------------------------------------------


def test_the_prompt_starts_with_what_stays_and_ends_with_the_region_around_the_cursor():
    history = history_of(PRICE, RENAMED)
    document = history.get("uri")
    assert document is not None
    prompt = next_edit.build_prompt(document, history.recent("uri"), 0)
    system, window, edits = (message["content"] for message in prompt.messages)
    assert system == next_edit.SYSTEM
    assert "tax_rate" in window and "tax)" not in window  # the file before the edits
    assert edits.endswith(
        f"{next_edit.START}\ndef total_price(items, tax):\n"
        "    subtotal = sum(item.price for item in items)\n"
        f"    return subtotal * (1 + tax_rate)\n{next_edit.END}"
    )
    assert prompt.answer_start == f"{next_edit.START}\n"


def test_the_window_of_the_file_stays_the_same_while_the_cursor_moves_within_a_step():
    text = "".join(f"line_{n} = {n}\n" for n in range(1000))
    firsts = {next_edit.window(text, anchor)[0] for anchor in range(500, 500 + next_edit.WINDOW_STEP // 2)}
    assert len(firsts) <= 2
    first, shown = next_edit.window(text, 500)
    assert first <= 500 < first + len(shown.splitlines())


# ---- the answer --------------------------------------------------------------------------------------------


def suggest(
    before: str, after: str, answer_region: str, cursor_line: int = 0, path: str = "price.py"
) -> list[next_edit.TextEdit] | None:
    history = history_of(before, after, path=path)
    document = history.get("uri")
    assert document is not None
    prompt = next_edit.build_prompt(document, history.recent("uri"), cursor_line)
    return next_edit.suggestion(document, prompt, next_edit.START + "\n" + answer_region)


def apply(text: str, edits: list[next_edit.TextEdit]) -> str:
    for edit in reversed(edits):
        text = text[: edit.start] + edit.new_text + text[edit.end :]
    return text


def test_the_suggestion_is_the_smallest_edit_that_makes_the_region_the_models():
    edits = suggest(PRICE, RENAMED, RENAMED.replace("(1 + tax_rate)", "(1 + tax)"))
    assert edits is not None
    assert [(RENAMED[e.start : e.end], e.new_text) for e in edits] == [("_rate", "")]
    assert apply(RENAMED, edits) == PRICE.replace("tax_rate", "tax")


def test_the_closing_marker_and_what_follows_it_are_not_part_of_the_suggestion():
    region = RENAMED.replace("(1 + tax_rate)", "(1 + tax)")
    edits = suggest(PRICE, RENAMED, region + next_edit.END + "\nmore")
    assert edits is not None and apply(RENAMED, edits) == PRICE.replace("tax_rate", "tax")


def test_no_suggestion_for_the_region_unchanged_an_undo_or_code_that_no_longer_parses():
    assert suggest(PRICE, RENAMED, RENAMED) is None
    assert suggest(PRICE, RENAMED, PRICE) is None  # the user's rename undone
    broken = RENAMED.replace("return subtotal * (1 + tax_rate)", "return subtotal * (1 + tax")
    assert suggest(PRICE, RENAMED, broken) is None
    lost = RENAMED.replace("    return subtotal * (1 + tax_rate)\n", "</|editable_region_end|>\n")
    # A marker written wrong: the model lost the format (in a file no parser checks).
    assert suggest(PRICE, RENAMED, lost, path="notes.txt") is None
    assert suggest(PRICE, RENAMED, RENAMED.replace("(1 + tax_rate)", "(1 + tax)"), path="notes.txt")


def test_a_file_whose_last_line_has_no_line_ending_keeps_it_so():
    before, after = PRICE.rstrip("\n"), RENAMED.rstrip("\n")
    edits = suggest(before, after, after.replace("(1 + tax_rate)", "(1 + tax)") + "\n")
    assert edits is not None and apply(after, edits) == before.replace("tax_rate", "tax")


def region_of(text: str) -> next_edit.Region:
    return next_edit.Region(0, len(text.splitlines()), text)


def test_an_answer_ends_once_the_model_copies_the_regions_lines_again_after_its_change():
    region = "".join(f"line {n}\n" for n in range(10))
    copying = next_edit.Copying(region_of(region))
    changed = region.replace("line 2\n", "line two\n")
    answer = ""
    for piece in changed.split(" "):  # pieces as a model writes them
        answer += piece + " "
        if not copying.keep_going(answer):
            break
    # "line two", then lines 3, 4 and 5 copied: the rest is the region's own.
    assert answer.startswith("line 0\nline 1\nline two\nline 3\nline 4\nline 5\n")
    assert len(answer) < len(changed)
    assert copying.completed(answer) == next_edit.START + "\n" + changed


def test_an_answer_that_only_copies_or_changes_a_line_further_down_writes_on():
    region = "".join(f"line {n}\n" for n in range(10))
    copying = next_edit.Copying(region_of(region))
    assert copying.keep_going(region)  # no change yet: no reason to stop
    assert copying.completed(region) == region
    copied = next_edit.Copying(region_of(region))
    assert not copied.keep_going(region + "line 10\n")  # past the region's end: it ends, unchanged
    assert copied.completed(region + "line 10\n") == next_edit.START + "\n" + region
    blank_after = "a = 1\nb = 2\n\n\n\nc = 3\n"
    assert next_edit.Copying(region_of(blank_after)).keep_going("a = 10\n\n\n\n")  # blank lines prove little


# ---- over stdio, on the test model -------------------------------------------------------------------------

pytestmark_lsp = pytest.mark.asyncio(loop_scope="module")
SERVER_OPTIONS = {"model": "qwen2.5-coder-0.5b", "contextSize": 4096, "slots": 2, "codebaseIndex": False}


def close(client: AssistantClient, uri: str) -> None:
    """Each test closes its documents: an open document's edits are part of the next ones' prompts."""
    client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri)))


def open_text(client: AssistantClient, path: Path, text: str) -> str:
    path.write_text(text)
    uri = path.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "python", 1, text))
    )
    return uri


def replace(
    client: AssistantClient, uri: str, version: int, line: int, start: int, end: int, text: str
) -> None:
    """One edit as an editor sends it: a range of one line replaced."""
    change = types.TextDocumentContentChangePartial(
        range=types.Range(types.Position(line, start), types.Position(line, end)), text=text
    )
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(version=version, uri=uri), [change]
        )
    )


def ask(client: AssistantClient, uri: str, version: int, line: int, character: int) -> asyncio.Future:
    return asyncio.ensure_future(
        client.request(
            protocol.NEXT_EDIT,
            {
                "textDocument": {"uri": uri, "version": version},
                "position": {"line": line, "character": character},
            },
        )
    )


async def next_edit_stats(client: AssistantClient) -> dict:
    return (await client.request(protocol.STATS, {}))["nextEdit"]


async def window_read(client: AssistantClient, uri: str, version: int) -> None:
    """Until the server has read the start of the prompt a suggestion for this version begins with."""
    for _ in range(600):
        if (await next_edit_stats(client))["warm"] == {"uri": uri, "firstLine": 0, "version": version}:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"the window of {uri} was not read: {await next_edit_stats(client)}")


@pytestmark_lsp
async def test_a_rename_is_followed_where_the_old_name_is_left(client: AssistantClient, tmp_path: Path):
    uri = open_text(client, tmp_path / "price.py", PRICE)
    replace(client, uri, 2, 0, 23, 31, "tax")  # tax_rate -> tax in the signature
    suggestion = await ask(client, uri, 2, 0, 26)
    assert suggestion is not None, await next_edit_stats(client)
    assert suggestion["edits"] == [
        {
            "range": {"start": {"line": 2, "character": 27}, "end": {"line": 2, "character": 35}},
            "newText": "tax",
        }
    ]
    stats = await next_edit_stats(client)
    assert stats["last"]["outcome"] == "repeated"  # no model needed
    for method in (protocol.NEXT_EDIT_SHOWN, protocol.NEXT_EDIT_ACCEPTED, protocol.NEXT_EDIT_ACCEPTED):
        client.protocol.notify(method, {"id": suggestion["id"]})
    client.protocol.notify(protocol.NEXT_EDIT_REJECTED, {"id": "ne-unknown"})
    after = await next_edit_stats(client)
    # Each kind of feedback counts once per suggestion; an id the server never gave counts nothing.
    assert (after["shown"] - stats["shown"], after["accepted"] - stats["accepted"]) == (1, 1)
    assert after["rejected"] == stats["rejected"]
    close(client, uri)


ENVIRON = """import os

HOST = os.environ["HOST"]
PORT = os.environ["PORT"]
USER = os.environ["USER"]
"""


@pytestmark_lsp
async def test_the_model_makes_the_same_change_to_the_next_line(client: AssistantClient, tmp_path: Path):
    uri = open_text(client, tmp_path / "environ.py", ENVIRON)
    replace(client, uri, 2, 2, 7, 25, 'os.environ.get("HOST")')
    await window_read(client, uri, 2)  # as while the user typed the edit
    suggestion = await ask(client, uri, 2, 2, 29)
    stats = await next_edit_stats(client)
    assert stats["last"]["outcome"] == "suggested", stats
    assert stats["last"]["nEvaluated"] < stats["last"]["nPrompt"]  # the file's window was read before
    text = ENVIRON.replace('os.environ["HOST"]', 'os.environ.get("HOST")')
    lines = text.split("\n")
    offsets = [sum(len(line) + 1 for line in lines[:n]) for n in range(len(lines))]
    for edit in reversed(suggestion["edits"]):
        start, end = edit["range"]["start"], edit["range"]["end"]
        assert start["line"] >= 3, suggestion  # below the user's edit, which stays
        text = (
            text[: offsets[start["line"]] + start["character"]]
            + edit["newText"]
            + text[offsets[end["line"]] + end["character"] :]
        )
    # The same change to the next line (and maybe the one after it: the 0.5B model does both).
    assert 'PORT = os.environ.get("PORT")\n' in text, suggestion
    close(client, uri)


@pytestmark_lsp
async def test_a_stale_version_and_a_document_with_no_edits_get_null(client: AssistantClient, tmp_path: Path):
    uri = open_text(client, tmp_path / "stale.py", PRICE)
    assert await ask(client, uri, 1, 0, 0) is None
    assert (await next_edit_stats(client))["last"]["outcome"] == "no edits"
    replace(client, uri, 2, 0, 23, 31, "tax")
    assert await ask(client, uri, 1, 0, 26) is None  # about version 1; the document is at 2
    assert (await next_edit_stats(client))["last"]["outcome"] == "stale"
    close(client, uri)


@pytestmark_lsp
async def test_an_edit_supersedes_the_suggestion_being_computed(client: AssistantClient, tmp_path: Path):
    long = "".join(f"def f{n}(price, tax_rate):\n    return price * (1 + tax_rate)\n\n" for n in range(60))
    uri = open_text(client, tmp_path / "long.py", long)
    replace(client, uri, 2, 1, 20, 20, "2 * ")  # an insertion: the model answers (a repeat needs none)
    pending = ask(client, uri, 2, 1, 21)
    await asyncio.sleep(0.3)
    replace(client, uri, 3, 1, 24, 24, "3 * ")
    assert await asyncio.wait_for(pending, 60) is None
    assert (await next_edit_stats(client))["last"]["outcome"] in ("superseded", "stale", "cancelled")
    close(client, uri)


@pytestmark_lsp
async def test_a_document_closed_while_its_suggestion_is_computed_gets_null(
    client: AssistantClient, tmp_path: Path
):
    long = "".join(f"def g{n}(price, tax_rate):\n    return price * (1 + tax_rate)\n\n" for n in range(60))
    uri = open_text(client, tmp_path / "closing.py", long)
    replace(client, uri, 2, 1, 20, 20, "2 * ")
    pending = ask(client, uri, 2, 1, 21)
    await asyncio.sleep(0.3)
    close(client, uri)
    assert await asyncio.wait_for(pending, 60) is None
    assert (await next_edit_stats(client))["last"]["outcome"] in ("superseded", "stale", "cancelled")


@pytestmark_lsp
async def test_a_chat_goes_first_and_stops_the_suggestion_being_computed(
    client: AssistantClient, tmp_path: Path
):
    long = "".join(f"def h{n}(price, tax_rate):\n    return price * (1 + tax_rate)\n\n" for n in range(60))
    uri = open_text(client, tmp_path / "chatting.py", long)
    replace(client, uri, 2, 1, 20, 20, "2 * ")
    pending = ask(client, uri, 2, 1, 21)
    await asyncio.sleep(0.3)
    answer = await client.request(protocol.CHAT, {"message": "Answer with one word: hello."})
    assert answer["content"].strip()
    assert await asyncio.wait_for(pending, 60) is None
    assert (await next_edit_stats(client))["last"]["outcome"] == "cancelled"
    close(client, uri)


@pytestmark_lsp
async def test_bad_params_get_an_error_that_names_the_field(client: AssistantClient, tmp_path: Path):
    uri = open_text(client, tmp_path / "bad.py", PRICE)
    with pytest.raises(JsonRpcException, match=r"textDocument\.version"):
        await client.request(
            protocol.NEXT_EDIT, {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}}
        )
    with pytest.raises(JsonRpcException, match="didOpen"):
        await ask(client, uri + "-closed", 1, 0, 0)
    replace(client, uri, 2, 0, 0, 3, "async def")  # an edit the model answers
    await ask(client, uri, 2, 500, 7)  # a cursor past the end: an answer about the last lines, no error
    close(client, uri)
    emptied = open_text(client, tmp_path / "emptied.py", "x = 1\n")
    replace(client, emptied, 2, 0, 0, 5, "")
    replace(client, emptied, 3, 0, 0, 1, "")
    assert await ask(client, emptied, 3, 0, 0) is None  # nothing left to rewrite
    assert (await next_edit_stats(client))["last"]["outcome"] == "no region"
    close(client, emptied)
