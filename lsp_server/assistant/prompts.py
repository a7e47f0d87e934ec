"""Prompt layout, stable-first: the system prompt and tools, then the document, then the conversation.

Whatever comes earlier changes less often, so a follow-up request shares the longest possible token
prefix with what the KV cache already holds.
"""

from __future__ import annotations

from typing import Any

SYSTEM_PROMPT = (
    "You are a coding assistant inside the user's editor. Answer precisely and briefly, in Markdown. "
    "When you change code, change only what the request needs and keep the file's style."
)

WORKSPACE_FOLDER = (
    "The workspace folder is `{}`: give its path to a tool that asks for a folder or repository."
)


def system_message(workspace_folder: str | None = None) -> dict[str, Any]:
    """The system prompt; with `workspace_folder`, where the workspace is on disk, for the MCP servers'
    tools: they run outside the editor, so a folder or repository they ask for is a path of their own
    (the reference git server's `repo_path`). Without it the 1.5B model wrote a placeholder such as
    `/path/to/repo` in every call of eval/mcp's git cases (9 of 9)."""
    if workspace_folder is None:
        return {"role": "system", "content": SYSTEM_PROMPT}
    return {"role": "system", "content": f"{SYSTEM_PROMPT} {WORKSPACE_FOLDER.format(workspace_folder)}"}


def document_message(path: str, text: str, selection: tuple[int, int] | None = None) -> dict[str, Any]:
    """The document as a user message; `selection` is a 1-based inclusive line range."""
    parts = [f"The file `{path}`:\n```\n{text.rstrip()}\n```"]
    if selection is not None:
        first, last = selection
        lines = text.splitlines()[first - 1 : last]
        parts.append(f"The selection is lines {first}-{last}:\n```\n" + "\n".join(lines) + "\n```")
    return {"role": "user", "content": "\n\n".join(parts)}
