"""`llama-lsp ask`: one question to the server, through the headless client (headless.py), as an editor asks.

The question goes through `assistant/chat` and its answer streams to stdout. With --action, the code
action of that kind is then resolved on the range, and its WorkspaceEdit is printed as a unified diff
(and written with --apply). Status and the stats line go to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.uris import to_fs_path

from ..assistant import actions
from ..assistant.edits import unified_diff
from ..lsp import lsp_json, protocol
from ..lsp.text_document import LspTextDocument, split_lines
from .headless import HeadlessClient


def format_stats(stats: dict[str, Any]) -> str:
    if stats.get("nReused") is None:
        reused = "reuse unknown"  # a remote backend that does not say
    else:
        share = stats["nReused"] / stats["nPrompt"] if stats.get("nPrompt") else 0.0
        reused = f"{stats['nReused']} reused ({share:.0%})"
    decode = stats["nGenerated"] / (stats["tDecodeMs"] / 1000) if stats.get("tDecodeMs") else 0.0
    return (
        f"[{stats['nPrompt']} prompt tokens, {reused}, "
        f"{stats['nEvaluated']} evaluated, {stats['nGenerated']} generated"
        f" ({stats.get('nAccepted', 0)} of {stats.get('nDrafted', 0)} drafted accepted) | "
        f"prefill {stats['tPrefillMs'] / 1000:.2f} s, first token {stats['tFirstTokenMs'] / 1000:.2f} s, "
        f"decode {decode:.1f} tok/s]"
    )


def parse_lines(text: str | None, n_lines: int) -> tuple[int, int] | None:
    """--range L1:L2 (1-based, inclusive) to 0-based lines."""
    if text is None:
        return None
    try:
        first_text, _, last_text = text.partition(":")
        first, last = int(first_text), int(last_text or first_text)
    except ValueError:
        raise SystemExit(f"llama-lsp: --range must look like 10:20, not {text!r}") from None
    if not 1 <= first <= last <= max(n_lines, 1):
        raise SystemExit(f"llama-lsp: --range {text} is outside the file's {n_lines} lines")
    return first - 1, last - 1


def lsp_range(lines: tuple[int, int] | None, n_lines: int) -> dict[str, Any]:
    first, last = lines if lines is not None else (0, max(n_lines - 1, 0))
    return {"start": {"line": first, "character": 0}, "end": {"line": last + 1, "character": 0}}


def apply_workspace_edit(edit: dict[str, Any], current: dict[str, str]) -> dict[str, str]:
    """The new text of every file the edit touches (computed in memory; nothing is written)."""
    result: dict[str, str] = {}
    for change in edit.get("documentChanges") or []:
        if change.get("kind") == "create":
            result[change["uri"]] = ""
            continue
        if "textDocument" not in change:
            continue
        uri = change["textDocument"]["uri"]
        if uri not in result:
            path = to_fs_path(uri)
            on_disk = Path(path).read_text(encoding="utf-8") if path and Path(path).exists() else ""
            result[uri] = current.get(uri, on_disk)
        document = LspTextDocument(uri, source=result[uri])
        edits = sorted(
            change["edits"], key=lambda e: (e["range"]["start"]["line"], e["range"]["start"]["character"])
        )
        for text_edit in reversed(edits):
            start = document.offset_at_position(types.Position(**text_edit["range"]["start"]))
            end = document.offset_at_position(types.Position(**text_edit["range"]["end"]))
            document = LspTextDocument(
                uri, source=document.source[:start] + text_edit["newText"] + document.source[end:]
            )
        result[uri] = document.source
    return result


async def _ask(args: argparse.Namespace) -> int:
    path = Path(args.file).resolve()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        print(f"llama-lsp: cannot read {path}: {exc}", file=sys.stderr)
        return 1
    lines = parse_lines(args.range, len(split_lines(text)))
    root = Path.cwd() if path.is_relative_to(Path.cwd()) else path.parent
    client = HeadlessClient(args.verbose)
    await client.start()
    report: dict[str, Any] = {}
    try:
        options = {"model": args.model, "maxTokens": args.max_tokens, "verifyCommand": args.verify}
        if args.backend_url:
            options["backend"] = {
                "url": args.backend_url,
                "model": args.backend_model,
                "apiKeyEnv": args.backend_key_env,
            }
        await client.initialize_session(root, options)
        status = await client.wait_until_loaded()
        if status["state"] == protocol.ERROR:
            return 1  # the server's message has been printed
        uri = path.as_uri()
        client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                types.TextDocumentItem(uri=uri, language_id="", version=1, text=text)
            )
        )
        status_code = await _run(client, args, uri, text, lines, report)
    except JsonRpcException as exc:
        print(f"llama-lsp: {exc.message}", file=sys.stderr)
        status_code = 1
    finally:
        await client.close()
    if args.json:
        print(json.dumps(report, indent=2))
    return status_code


async def _run(
    client: HeadlessClient,
    args: argparse.Namespace,
    uri: str,
    text: str,
    lines: tuple[int, int] | None,
    report: dict[str, Any],
) -> int:
    chat_params: dict[str, Any] = {
        "textDocument": {"uri": uri},
        "message": args.question,
        "partialResultToken": "ask",
    }
    if lines is not None:
        chat_params["range"] = lsp_range(lines, len(split_lines(text)))
    client.stream = None if args.json else _write
    answer = await client.request(protocol.CHAT, chat_params)
    report["answer"] = answer
    if not args.json:
        print("", file=sys.stdout)
        print(format_stats(answer["stats"]), file=sys.stderr)
    edit = answer.get("edit")
    if args.action:
        # The action continues the chat, so that it builds on the answer just given.
        action = await _resolve_action(client, args, uri, text, lines, answer["conversationId"])
        report["action"] = action
        if actions.BY_NAME[args.action].output is actions.Output.ANSWER:
            if not args.json:
                print(action["command"]["arguments"][0]["content"])
            return 0
        edit = action.get("edit")
        if edit and not args.json:
            print(f"\n{action['data']['verification']['summary']}", file=sys.stderr)
    if edit:
        return _show_edit(edit, {uri: text}, args, report)
    return 0


async def _resolve_action(
    client: HeadlessClient,
    args: argparse.Namespace,
    uri: str,
    text: str,
    lines: tuple[int, int] | None,
    conversation_id: str,
) -> dict[str, Any]:
    selection = lsp_range(lines, len(split_lines(text)))
    diagnostics = []
    if actions.BY_NAME[args.action].for_diagnostics:  # the question describes the problem to fix
        diagnostics = [
            {"range": selection, "message": args.question, "severity": 1, "source": "llama-lsp ask"}
        ]
    offered = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=lsp_json.from_json(selection, types.Range),
            context=types.CodeActionContext(
                diagnostics=[lsp_json.from_json(d, types.Diagnostic) for d in diagnostics]
            ),
        )
    )
    chosen = next(
        a
        for a in offered or []
        if isinstance(a, types.CodeAction) and (a.data or {}).get("kind") == args.action
    )
    chosen.data = {**(chosen.data or {}), "conversationId": conversation_id}
    if not args.json:
        print(f"\n{chosen.title}...", file=sys.stderr)
    resolved = await client.code_action_resolve_async(chosen)
    return dict(lsp_json.to_json(resolved))


def _show_edit(
    edit: dict[str, Any], current: dict[str, str], args: argparse.Namespace, report: dict[str, Any]
) -> int:
    after = apply_workspace_edit(edit, current)
    report["diff"] = ""
    for uri, new_text in after.items():
        path = Path(to_fs_path(uri) or uri)
        shown = path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path
        before = current.get(uri, path.read_text(encoding="utf-8") if path.exists() else "")
        report["diff"] += unified_diff(str(shown), before, new_text)
        if args.apply:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(new_text, encoding="utf-8")
            print(f"Applied to {shown}", file=sys.stderr)
    if not args.json:
        print("\nProposed edit:")
        print(report["diff"], end="")
    return 0


def _write(piece: str) -> None:
    sys.stdout.write(piece)
    sys.stdout.flush()


def run_ask(args: argparse.Namespace) -> int:
    return asyncio.run(_ask(args))
