"""The `llama-lsp` command: the language server (the default), model management, the headless client."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .. import __version__
from ..engine import models
from ..lsp.protocol import ACTION_KINDS


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


def _serve(args: argparse.Namespace) -> int:
    import logging
    import os

    logging.basicConfig(
        level=getattr(logging, args.log_level.upper()),
        format="%(asctime)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    if args.log_level != "debug":
        # pygls logs every message it sends at INFO: a kilobyte or more per request, of no use below debug.
        logging.getLogger("pygls").setLevel(logging.WARNING)
    # stdout is the LSP channel: give the server its own copy of it, and point file descriptor 1 at
    # stderr so that nothing else (llama.cpp's C code included) can write into the protocol stream.
    channel = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    from ..lsp.rpc import serve_stdio
    from ..lsp.server import create_server

    return serve_stdio(create_server(), stdin=sys.stdin.buffer, stdout=channel)


def _ask(args: argparse.Namespace) -> int:
    from .ask import run_ask

    return run_ask(args)


class _VersionAction(argparse.Action):
    """`--version` loads the native library too, so it also proves that the server can start."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print the versions and exit")

    def __call__(self, parser: argparse.ArgumentParser, *_args: object) -> None:
        from ..engine import native

        print(f"llama-lsp {__version__}\nnative library {native.version()}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="llama-lsp", description=__doc__)
    parser.add_argument("--version", action=_VersionAction)
    parser.add_argument("--stdio", action="store_true", help="serve LSP over stdio (the default)")
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    parser.set_defaults(run=_serve)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    serve = commands.add_parser("serve", help="run the language server on stdio (the default command)")
    serve.add_argument("--stdio", action="store_true", help="accepted for clients that pass it")
    serve.set_defaults(run=_serve)

    model = commands.add_parser("model", help="list, install or locate models")
    model_commands = model.add_subparsers(dest="model_command", metavar="ACTION", required=True)
    model_commands.add_parser("list", help="show the catalogue and what is installed").set_defaults(
        run=_model_list
    )
    install = model_commands.add_parser("install", help="download and verify a model")
    install.add_argument("name", choices=sorted(models.CATALOGUE))
    install.set_defaults(run=_model_install)
    path = model_commands.add_parser("path", help="print the GGUF path of an installed model")
    path.add_argument("name", nargs="?", default=models.DEFAULT_MODEL)
    path.set_defaults(run=_model_path)

    ask = commands.add_parser("ask", help="ask about a file through the server, as an editor would")
    ask.add_argument("file")
    ask.add_argument("question", help="the question; with --action fix, the problem to fix")
    ask.add_argument("--range", help="lines L1:L2 (1-based, inclusive) the question is about")
    ask.add_argument(
        "--action",
        choices=ACTION_KINDS,
        help="then run this code action on the range and print its edit as a diff",
    )
    ask.add_argument("--apply", action="store_true", help="write the proposed edit to the files")
    ask.add_argument("--model", default=models.DEFAULT_MODEL, help="a model name or a GGUF path")
    ask.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    ask.add_argument("--max-tokens", type=int, default=512)
    ask.add_argument(
        "--verify",
        metavar="CMD",
        help="check the action's edit with this shell command, run on a temporary copy of the folder "
        "({file} is the edited file); the server retries when it fails. Default: auto, the project's "
        'tests where it finds them; "" checks nothing',
    )
    backend = ask.add_argument_group("a remote backend (an OpenAI-compatible server) instead of --model")
    backend.add_argument("--backend-url", metavar="URL", help="the API's base URL, e.g. http://host:8080/v1")
    backend.add_argument(
        "--backend-model", metavar="NAME", help="the model the server serves (needed where it serves several)"
    )
    backend.add_argument(
        "--backend-key-env", metavar="VAR", help="the environment variable that holds the API key"
    )
    ask.add_argument("--verbose", action="store_true", help="show the server's log")
    ask.set_defaults(run=_ask)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.run(args))
    except models.ModelError as exc:
        print(f"llama-lsp: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
