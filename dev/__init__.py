"""Development tools that stay out of the package: the wheel carries only lsp_server."""
