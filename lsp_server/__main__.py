"""`python -m lsp_server` is the `llama-lsp` command."""

import sys

from .clients.cli import main

sys.exit(main())
