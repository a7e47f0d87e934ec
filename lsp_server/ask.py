"""`llama-lsp ask`: ask about a file from a terminal, streaming the answer and showing edits as diffs.

For now it drives the engine in-process; once the language server exists it will speak LSP to a
spawned server instead, the same path an editor takes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from pathlib import Path
from typing import Any

from . import models, prompts
from .edits import EditError, apply_replacement, unified_diff
from .engine import ChatRequest, ChatResult, Engine, EngineConfig, Stats, ToolCall, model_cache_key


def format_stats(stats: Stats) -> str:
    decode_rate = stats.n_generated / (stats.t_decode_ms / 1000) if stats.t_decode_ms > 0 else 0.0
    return (
        f"[{stats.n_prompt} prompt tokens, {stats.n_reused} reused ({stats.reuse_ratio:.0%}), "
        f"{stats.n_evaluated} evaluated, {stats.n_generated} generated | "
        f"prefill {stats.t_prefill_ms / 1000:.2f} s, first token {stats.t_first_token_ms / 1000:.2f} s, "
        f"decode {decode_rate:.1f} tok/s]"
    )


def parse_range(text: str | None, n_lines: int) -> tuple[int, int] | None:
    if text is None:
        return None
    try:
        first_text, _, last_text = text.partition(":")
        first, last = int(first_text), int(last_text or first_text)
    except ValueError:
        raise SystemExit(f"llama-lsp: --range must look like 10:20, not {text!r}") from None
    if not 1 <= first <= last <= max(n_lines, 1):
        raise SystemExit(f"llama-lsp: --range {text} is outside the file's {n_lines} lines")
    return first, last


async def _ask(args: argparse.Namespace) -> int:
    path = Path(args.file)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        print(f"llama-lsp: cannot read {path}: {exc}", file=sys.stderr)
        return 1
    selection = parse_range(args.range, len(text.splitlines()))
    model_path = models.resolve(args.model)
    state_dir = models.cache_root() / "state" / model_cache_key(model_path)
    engine = Engine(EngineConfig(model_path=model_path, state_dir=state_dir))
    report: dict[str, Any] = {}
    status = 0
    try:
        print(f"Loading {args.model}...", file=sys.stderr)
        await engine.ready()
        messages = [
            prompts.system_message(),
            prompts.document_message(str(path), text, selection),
            {"role": "user", "content": args.question},
        ]
        stream = None if args.json else _write
        # The tools are declared on every turn (unused on this one) so the prompt's prefix stays stable.
        tools = [prompts.EDIT_TOOL]
        answer = await engine.generate(
            ChatRequest(
                messages=messages,
                tools=tools,
                tool_choice="none",
                max_tokens=args.max_tokens,
                slot="ask",
            ),
            stream,
        )
        report["answer"] = _result_json(answer)
        if not args.json:
            print("\n" + format_stats(answer.stats), file=sys.stderr)
        if args.edit:
            messages += [
                {"role": "assistant", "content": answer.content},
                {"role": "user", "content": f"{args.edit}. Propose the change with the edit tool."},
            ]
            after, edit_report = await _propose_edit(engine, messages, tools, path, text, args)
            report["edit"] = edit_report
            if after is None:
                status = 1
            else:
                if not args.json:
                    print("\nProposed edit:")
                    print(unified_diff(str(path), text, after), end="")
                if args.apply:
                    path.write_text(after, encoding="utf-8")
                    print(f"Applied to {path}", file=sys.stderr)
    finally:
        engine.close()
    if args.json:
        print(json.dumps(report, indent=2))
    return status


def _write(piece: str) -> None:
    sys.stdout.write(piece)
    sys.stdout.flush()


def _result_json(result: ChatResult) -> dict[str, Any]:
    return {
        "content": result.content,
        "finish_reason": result.finish_reason,
        "tool_calls": [vars(call) for call in result.tool_calls],
        "stats": vars(result.stats),
    }


EDIT_ATTEMPTS = 3


async def _propose_edit(
    engine: Engine,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    path: Path,
    text: str,
    args: argparse.Namespace,
) -> tuple[str | None, dict[str, Any]]:
    """Asks for an edit until one applies; each failure goes back to the model as the tool's result."""
    report: dict[str, Any] = {"attempts": []}
    for _ in range(EDIT_ATTEMPTS):
        proposal = await engine.generate(
            ChatRequest(
                messages=messages, tools=tools, tool_choice="required", max_tokens=args.max_tokens, slot="ask"
            )
        )
        report["attempts"].append(_result_json(proposal))
        if not args.json:
            print(format_stats(proposal.stats), file=sys.stderr)
        if not proposal.tool_calls:
            report["error"] = "the model proposed no edit"
            break
        call = proposal.tool_calls[0]
        try:
            if not isinstance(call.arguments, dict):
                raise EditError("the arguments are not a JSON object")
            after = apply_replacement(
                text, str(call.arguments.get("old_text", "")), str(call.arguments.get("new_text", ""))
            )
        except EditError as exc:
            report["error"] = str(exc)
            print(f"llama-lsp: the proposed edit does not apply ({exc}); asking again", file=sys.stderr)
            messages = [
                *messages,
                _tool_call_message(call),
                {"role": "tool", "tool_call_id": call.id, "content": f"Error: {exc}. The file is unchanged."},
            ]
            continue
        report.pop("error", None)
        report["tool_call"] = vars(call)
        return after, report
    print(f"llama-lsp: no applicable edit: {report.get('error')}", file=sys.stderr)
    return None, report


def _tool_call_message(call: ToolCall) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
            }
        ],
    }


def run_ask(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s", stream=sys.stderr)
    return asyncio.run(_ask(args))
