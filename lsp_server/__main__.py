"""`python -m lsp_server` is the `llama-lsp` command."""

import sys

from .cli import main

sys.exit(main())
