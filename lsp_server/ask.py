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
from .engine import ChatRequest, ChatResult, Engine, EngineConfig, Stats, model_cache_key


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
            proposal = await engine.generate(
                ChatRequest(
                    messages=messages,
                    tools=tools,
                    tool_choice="required",
                    max_tokens=args.max_tokens,
                    slot="ask",
                )
            )
            report["edit"] = _result_json(proposal)
            status = _show_edit(path, text, proposal, args)
            if not args.json:
                print(format_stats(proposal.stats), file=sys.stderr)
            if status:
                return status
    finally:
        engine.close()
    if args.json:
        print(json.dumps(report, indent=2))
    return 0


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


def _show_edit(path: Path, text: str, proposal: ChatResult, args: argparse.Namespace) -> int:
    if not proposal.tool_calls:
        print(f"llama-lsp: the model proposed no edit: {proposal.content}", file=sys.stderr)
        return 1
    arguments = proposal.tool_calls[0].arguments
    if not isinstance(arguments, dict):
        print(f"llama-lsp: the model's edit was not valid JSON: {arguments}", file=sys.stderr)
        return 1
    try:
        after = apply_replacement(
            text, str(arguments.get("old_text", "")), str(arguments.get("new_text", ""))
        )
    except EditError as exc:
        print(f"llama-lsp: the proposed edit does not apply: {exc}", file=sys.stderr)
        return 1
    if not args.json:
        print("\nProposed edit:")
        print(unified_diff(str(path), text, after), end="")
    if args.apply:
        path.write_text(after, encoding="utf-8")
        print(f"Applied to {path}", file=sys.stderr)
    return 0


def run_ask(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s", stream=sys.stderr)
    return asyncio.run(_ask(args))
