"""The clients: the command line (`llama-lsp`) and the headless client behind `llama-lsp ask`."""
