"""`make generate`: write every generated file that differs from what the declarations make now."""

from __future__ import annotations

import sys

from . import render_all
from .common import rel


def main() -> int:
    for path, text in render_all().items():
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {rel(path)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
