"""The assistant's core, without LSP types: conversations and the turn loop, prompts, the tools and
their sandbox, edits, the block-rewrite format, and checking edits."""
