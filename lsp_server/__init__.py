"""llama-lsp: a language server that keeps one llama.cpp model resident and reuses its KV cache."""

__version__ = "0.1.0"
