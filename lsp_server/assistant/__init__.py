"""The assistant's core, without LSP types: conversations and the turn loop, prompts, the action kinds,
the tools the model calls (tools/), edits and the block-rewrite format, checking edits (checks/), what
differs per language (languages.py) and the workspace index (codebase.py)."""
