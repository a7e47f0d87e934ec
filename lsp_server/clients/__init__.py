"""The clients: the command line (`llama-lsp`), `llama-lsp ask`, and the headless client behind it that
eval and bench drive the server with too."""
