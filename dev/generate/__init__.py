"""Writes what the declarations generate: the settings (lsp_server/lsp/settings.py, through settings.py
here) and the protocol (lsp_server/lsp/protocol_shapes.py, through protocol.py here).

`make generate` (`python -m dev.generate`) rewrites the files; tests/test_settings_declared.py and
tests/test_protocol_generated.py render them again and fail when one on disk differs. Build-time only: the
wheel does not carry this folder.
"""

from __future__ import annotations

from pathlib import Path

from . import protocol, settings

GENERATORS = (settings, protocol)


def render_all() -> dict[Path, str]:
    """Every generated file's text as the declarations make it now. Two generators write parts of the
    same files (package.json, docs/protocol.md): each starts from what the one before left."""
    texts: dict[Path, str] = {}

    def read(path: Path) -> str:
        return texts[path] if path in texts else path.read_text(encoding="utf-8")

    for generator in GENERATORS:
        texts.update(generator.render(read))
    return texts
