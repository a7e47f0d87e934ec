"""The `llama-lsp` command: model management and the headless client."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from . import __version__, models


def _model_list(_args: argparse.Namespace) -> int:
    print(f"models directory: {models.models_dir()}")
    for spec, installed in models.describe():
        mark = "installed" if installed else "not installed"
        default = " (default)" if spec.name == models.DEFAULT_MODEL else ""
        print(f"  {spec.name:<22} {spec.size / 2**20:7.0f} MiB  {mark:<14} {spec.description}{default}")
    return 0


def _model_install(args: argparse.Namespace) -> int:
    path = models.install(args.name)
    print(path)
    return 0


def _model_path(args: argparse.Namespace) -> int:
    print(models.resolve(args.name))
    return 0


def _ask(args: argparse.Namespace) -> int:
    from .ask import run_ask

    return run_ask(args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="llama-lsp", description=__doc__)
    parser.add_argument("--version", action="version", version=f"llama-lsp {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    model = commands.add_parser("model", help="list, install or locate models")
    model_commands = model.add_subparsers(dest="model_command", metavar="ACTION", required=True)
    model_commands.add_parser("list", help="show the catalogue and what is installed").set_defaults(
        run=_model_list
    )
    install = model_commands.add_parser("install", help="download and verify a model")
    install.add_argument("name", choices=sorted(models.CATALOGUE))
    install.set_defaults(run=_model_install)
    path = model_commands.add_parser("path", help="print the GGUF path of an installed model")
    path.add_argument("name")
    path.set_defaults(run=_model_path)

    ask = commands.add_parser("ask", help="ask about a file from the command line")
    ask.add_argument("file")
    ask.add_argument("question")
    ask.add_argument("--range", help="lines L1:L2 (1-based, inclusive) the question is about")
    ask.add_argument("--edit", metavar="INSTRUCTION", help="then ask for an edit and print it as a diff")
    ask.add_argument("--apply", action="store_true", help="write the proposed edit to the file")
    ask.add_argument("--model", default=models.DEFAULT_MODEL, help="a model name or a GGUF path")
    ask.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    ask.add_argument("--max-tokens", type=int, default=400)
    ask.set_defaults(run=_ask)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "run"):
        parser.print_help()
        return 2
    try:
        return int(args.run(args))
    except models.ModelError as exc:
        print(f"llama-lsp: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
