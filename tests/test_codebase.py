"""The workspace index (lsp_server.assistant.codebase, lsp.codebase_index): what it indexes, how it
ranks, how it follows changes, how it is saved and read back, what it does with files that are not
code, and `assistant/searchCodebase` over LSP (whose server loads the test model, unused)."""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import bm25s
import numpy as np
import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.workspace import Workspace

from lsp_server.assistant import codebase, languages
from lsp_server.assistant.codebase import CodebaseIndex, words
from lsp_server.assistant.tools.runner import ToolRunner
from lsp_server.assistant.tools.workspace_files import WorkspaceFiles
from lsp_server.lsp import protocol, settings
from lsp_server.lsp.codebase_index import WorkspaceIndex

from .lsp_client import AssistantClient, open_document
from .test_chat_answers import ScriptedModel, rendered_probe  # noqa: F401 (a fixture)
from .test_remote_backend import language_server

RETRY = '''"""Talking to the server."""

import time

RETRY_DELAY_S = 0.5


def reach_server(server, attempts=3):
    """Connects, waiting longer after each failed attempt (the delay doubles)."""
    delay = RETRY_DELAY_S
    for _ in range(attempts):
        if server.connect():
            return True
        time.sleep(delay)
        delay *= 2
    return False


class Session:
    def close(self):
        return None
'''

TEST = """from net import reach_server


def test_reach_server_gives_up():
    # the delay doubles after each failed attempt: reach_server, reach_server, reach_server
    assert reach_server(None, attempts=0) is False
"""


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "src" / "net.py").write_text(RETRY)
    (root / "src" / "shapes.py").write_text("def area(width, height):\n    return width * height\n")
    (root / "tests" / "test_net.py").write_text(TEST)
    (root / "README.md").write_text(
        "# Net\n\nReach the server; the retry delay doubles after each attempt.\n"
    )
    (root / ".gitignore").write_text("ignored/\n")
    (root / "ignored").mkdir()
    (root / "ignored" / "secret.py").write_text("def reach_server_secretly():\n    pass\n")
    git(root, "init", "-q")
    return root


def test_words_split_identifiers_and_drop_what_names_no_code():
    assert words("reachServer retry_delay_S the HTTPServer handles") == [
        "reach", "server", "retri", "delay", "http", "server", "handl",
    ]  # fmt: skip
    # One stem for a word's forms (Snowball's), where cutting endings by hand split class from classes.
    assert len(set(words("handle handles handled handling"))) == 1
    assert len(set(words("class classes"))) == len(set(words("proxy proxies"))) == 1
    assert words("access status") == ["access", "status"]


def test_a_query_word_the_index_lacks_is_looked_for_as_words_written_together(tmp_path: Path):
    (tmp_path / "env.py").write_text("def env_log_dir(conf):\n    return conf.work_dir / 'log'\n")
    (tmp_path / "other.py").write_text("def unrelated():\n    pass\n")
    index = CodebaseIndex([tmp_path])
    index.build()
    vocabulary = index._vocabulary
    assert codebase.query_words("add envlogdir support", vocabulary) == [
        "add",
        "env",
        "log",
        "dir",
        "support",
    ]
    assert codebase.query_words("workdir", vocabulary) == ["work", "dir"]
    assert codebase.query_words("zzzqqq", vocabulary) == ["zzzqqq"]  # no split: left as it is
    assert index.search("envlogdir")[0].symbol == "env_log_dir"


def test_configuration_and_data_files_count_as_documentation_does():
    for path in [".pre-commit-config.yaml", "tox.ini", "setup.cfg", "pyproject.toml", "src/LICENSE",
                 "docker/Dockerfile", "docs/img/logo.svg", "package.json"]:  # fmt: skip
        assert codebase.file_weight(path) == codebase.CONFIGURATION_WEIGHT, path
    for path in ["setup.py", "src/config.py", "web/settings.ts", "scripts/lint"]:
        assert codebase.file_weight(path) == 1.0, path


def test_every_file_of_the_tests_counts_less_though_a_check_runs_only_the_test_modules():
    # The index's rule is wider than the check's on purpose (languages.py): helpers, fixtures, conftest.py
    # and other languages' specs name the code without being it, but run no test.
    wider = ["tests/helpers.py", "tests/conftest.py", "web/app.spec.ts", "lib/x_spec.rb", "Tests/Test_A.py"]
    for path in ["tests/test_net.py", "src/net_test.py", *wider]:
        assert codebase.file_weight(path) == codebase.TEST_WEIGHT, path
        assert languages.is_test_file(Path(path)) == (path not in wider), path
    for path in ["src/net.py", "src/testing_utils.py", "src/contest.py"]:
        assert codebase.file_weight(path) == 1.0 and not languages.is_test_file(Path(path)), path


def test_python_is_indexed_by_definition_and_the_right_chunk_comes_first(repo: Path):
    index = CodebaseIndex([repo])
    index.build()
    hits = index.search("the retry delay doubles after a failed attempt to reach the server")
    assert (hits[0].path, hits[0].symbol, hits[0].start_line) == ("src/net.py", "reach_server", 8)
    assert hits[0].end_line == 16 and hits[0].snippet.startswith("def reach_server(server, attempts=3):")
    # The test that names it four times and the README that describes it rank below the code.
    files = [path for path, _ in index.rank_files("reach server retry delay attempt")]
    assert files.index("src/net.py") < files.index("tests/test_net.py")
    assert files.index("src/net.py") < files.index("README.md")
    symbols = {hit.symbol for hit in index.search("session close", limit=3)}
    assert "Session" in symbols


def spans(shown: str, text: str) -> list[tuple[int, int, str | None]]:
    return [(chunk.start_line, chunk.end_line, chunk.symbol) for chunk, _ in codebase.chunks_of(shown, text)]


TYPESCRIPT = """import { connect } from "./net";

/** Reaches the server, waiting longer after each failed attempt. */
export async function reachServer(server: Server, attempts = 3): Promise<boolean> {
  return connect(server, attempts);
}

export const retryDelay = (attempt: number) => 2 ** attempt;

@Injectable()
export class Session {
  private open = false;

  close(): void {
    this.open = false;
  }

  get isOpen(): boolean {
    return this.open;
  }
}

type Attempt = { count: number };
"""


def test_typescript_is_cut_at_its_functions_and_classes_with_their_doc_comments(
    monkeypatch: pytest.MonkeyPatch,
):
    assert spans("src/net.ts", TYPESCRIPT) == [
        (1, 1, None),
        (3, 6, "reachServer"),  # its JSDoc comment with it
        (8, 8, "retryDelay"),  # an arrow function bound to a name
        (10, 21, "Session"),  # a short class whole, its decorator with it
        (23, 23, "Attempt"),
    ]
    # A long class (past two windows) is cut as Python's are: its head up to the first method, then
    # each method under the class's name.
    monkeypatch.setattr(codebase, "CHUNK_LINES", 4)
    assert spans("src/net.ts", TYPESCRIPT)[3:6] == [
        (10, 13, "Session"),
        (14, 16, "Session.close"),
        (18, 20, "Session.isOpen"),
    ]


GO = """package net

import "time"

// Server is a peer to reach.
type Server struct {
	Address string
}

const retries = 3
var delay = time.Second

// Reach connects, waiting longer after each failed attempt.
func (s *Server) Reach(attempts int) bool {
	return false
}

func main() {
}
"""

RUST = """use std::fmt;

/// A point on the plane.
#[derive(Debug)]
pub struct Point {
    x: i32,
}

impl fmt::Display for Point {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}", self.x)
    }
}
"""

C = """#include <stdio.h>
#ifndef NET_H
#define NET_H

/* Connects, waiting longer after each failed attempt. */
static int *reach_server(const char *address, int attempts)
{
    return NULL;
}

typedef struct {
    int attempts;
} retry_t;
#endif

int main(void) { return 0; }
"""


def test_go_rust_and_c_are_cut_at_their_definitions_with_their_names(monkeypatch: pytest.MonkeyPatch):
    assert spans("net/server.go", GO) == [
        (1, 3, None),
        (5, 8, "Server"),
        (10, 11, None),  # the code between definitions, in one run as Python's
        (13, 16, "Server.Reach"),  # a method under its receiver's type
        (18, 19, "main"),
    ]
    assert spans("src/point.rs", RUST) == [(1, 1, None), (3, 7, "Point"), (9, 13, "Point")]
    monkeypatch.setattr(codebase, "CHUNK_LINES", 2)
    assert spans("src/point.rs", RUST)[2:] == [(9, 9, "Point"), (10, 12, "Point.fmt")]
    monkeypatch.undo()
    # Definitions inside #if blocks are the file's (a header's include guard holds them all).
    assert spans("src/net.c", C) == [
        (1, 3, None),
        (5, 9, "reach_server"),
        (11, 13, "retry_t"),
        (16, 16, "main"),
    ]


def test_a_file_that_does_not_parse_and_an_unknown_language_are_cut_in_windows():
    # An unclosed brace: the function tree-sitter sees around the error may end anywhere (here at the
    # end of the file), so its lines are cut as plain code, in windows.
    broken = "function open() {\n  if (x) {\n" + "  step();\n" * 100
    assert spans("src/broken.js", broken) == [(1, 40, None), (41, 80, None), (81, 102, None)]
    assert spans("src/broken.py", "def open(:\n" + "    step()\n" * 50) == [(1, 40, None), (41, 51, None)]
    # A definition beside the error keeps its chunk.
    assert spans("src/half.js", "function kept() {}\nlet = ;\n")[0] == (1, 1, "kept")
    lisp = "(defun reach-server (server)\n  (connect server))\n" * 30
    assert spans("src/net.lisp", lisp) == [(1, 40, None), (41, 60, None)]


def test_the_definition_tables_name_node_types_their_grammars_have():
    for language in languages.LANGUAGES:
        if language.definitions is None or language.grammar is None:
            continue
        grammar = languages._grammar(*language.grammar)
        table = language.definitions
        for kind in (
            table.whole
            | table.containers
            | table.wrappers
            | table.bindings
            | table.function_values
            | table.transparent
            | table.attached
        ):
            assert grammar.id_for_node_kind(kind, True) is not None, (language.name, kind)


def test_the_symbol_table_answers_in_the_language_asked(repo: Path):
    (repo / "web").mkdir()
    (repo / "web" / "net.ts").write_text(TYPESCRIPT)
    (repo / "src" / "retry.py").write_text("def reachServer():\n    pass\n")
    index = CodebaseIndex([repo])
    index.build()
    assert index.definitions("reachServer") == [("src/retry.py", 1, 2)]  # Python's, by default
    assert index.definitions("reachServer", "typescript") == [("web/net.ts", 3, 6)]
    assert index.search("reach server attempt")[0].path in {"web/net.ts", "src/net.py"}


def test_gitignored_files_are_not_indexed(repo: Path):
    index = CodebaseIndex([repo])
    index.build()
    assert "secretly" not in {w for hit in index.search("reach server secretly", 20) for w in [hit.path]}
    assert all(not hit.path.startswith("ignored/") for hit in index.search("reach server secretly", 20))
    assert index.n_files == 5  # the two modules, the test, the README, .gitignore


def test_a_change_a_new_file_and_a_removal_are_followed(repo: Path):
    index = CodebaseIndex([repo])
    index.build()
    assert index.search("parallelogram") == []
    (repo / "src" / "shapes.py").write_text(
        "def parallelogram_area(base, height):\n    return base * height\n"
    )
    index.update(repo / "src" / "shapes.py")
    assert index.search("parallelogram")[0].symbol == "parallelogram_area"
    index.update(
        repo / "src" / "shapes.py", "def rhombus(d1, d2):\n    return d1 * d2 / 2\n"
    )  # the editor's text
    assert index.search("parallelogram") == [] and index.search("rhombus")[0].path == "src/shapes.py"
    (repo / "src" / "new.py").write_text("def trapezoid():\n    pass\n")
    index.update(repo / "src" / "new.py")
    assert index.search("trapezoid")[0].path == "src/new.py"
    (repo / "src" / "new.py").unlink()
    index.update(repo / "src" / "new.py")
    assert index.search("trapezoid") == []
    index.update(repo.parent / "outside.py", "def trapezoid(): pass")  # outside the folders: ignored
    for hidden in ("node_modules/lib.py", ".git/hooks/x.py", "build/gen.py"):  # a client's file events
        (repo / hidden).parent.mkdir(parents=True, exist_ok=True)
        (repo / hidden).write_text("def trapezoid(): pass\n")
        index.update(repo / hidden)
    assert index.search("trapezoid") == []


def test_a_saved_index_is_read_back_and_only_changed_files_are_read_again(repo: Path, monkeypatch):
    index = CodebaseIndex([repo])
    index.build()
    saved = repo.parent / "cache" / "index.json.gz"
    index.save(saved)
    (repo / "src" / "shapes.py").write_text("def hexagon():\n    pass\n")
    read: list[str] = []
    original = CodebaseIndex._read

    def counting(self: CodebaseIndex, path: Path, size: int) -> str | None:
        read.append(path.name)
        return original(self, path, size)

    monkeypatch.setattr(CodebaseIndex, "_read", counting)
    again = CodebaseIndex([repo])
    assert again.load(saved)
    assert again.search("reach server retry")[0].symbol == "reach_server"  # from the saved index alone
    again.build()
    assert read == ["shapes.py"]  # the one file that changed since
    assert again.search("hexagon")[0].path == "src/shapes.py"


@pytest.mark.parametrize(
    "payload",
    [
        b"not gzip at all",
        gzip.compress(b"{not json"),
        gzip.compress(json.dumps({"version": 999, "roots": [], "files": {}}).encode()),
        gzip.compress(
            json.dumps({"version": codebase.FORMAT_VERSION, "roots": ["/elsewhere"], "files": {}}).encode()
        ),
        gzip.compress(
            json.dumps(
                {"version": 1, "roots": None, "files": {"a.py": [1, 2, [[1, "x", None, ""]]]}}
            ).encode()
        ),
    ],
)
def test_a_saved_index_that_is_corrupt_or_another_folders_is_not_read(repo: Path, payload: bytes):
    saved = repo.parent / "index.json.gz"
    saved.write_bytes(payload)
    index = CodebaseIndex([repo])
    assert index.load(saved) is False
    assert index.n_files == 0


def test_files_that_are_not_code_are_skipped_and_counted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    root = tmp_path / "plain"  # not a git repository: every file the tools see
    root.mkdir()
    (root / "code.py").write_text("def kept():\n    pass\n")
    (root / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0" + os.urandom(64))
    (root / "bundle.min.js").write_text("var a=1;" * 500)
    (root / "huge.py").write_text("x = 1\n" * (codebase.MAX_FILE_BYTES // 6 + 10))
    (root / "loop").symlink_to("loop")
    (root / "sub").mkdir()
    (root / "sub" / "up").symlink_to("..")
    index = CodebaseIndex([root])
    index.build()
    assert index.search("kept")[0].path == "code.py"
    assert index.skipped.counts == {"binary": 1, "minified or generated": 1, "over 512 KB": 1}
    assert index.n_files == 1


def test_excluded_and_oversized_files_are_left_out_even_when_indexed_before(repo: Path):
    net = repo / "src" / "net.py"
    net.write_text(RETRY + "# padding\n" * 200)  # 2 KB and more
    index = CodebaseIndex([repo])
    index.build()
    saved = repo.parent / "saved.json.gz"
    index.save(saved)
    assert {"src/net.py", "src/shapes.py"} <= {hit.path for hit in index.search("reach server area", 10)}
    # The user excludes a file and lowers the size bound: the saved index is read, and what it held
    # that is now left out goes, though neither file changed.
    bounded = CodebaseIndex([repo], exclude=["**/shapes*"], max_file_bytes=1024)
    assert bounded.load(saved)
    bounded.build()
    assert bounded.skipped.counts == {"excluded (codebaseExclude)": 1, "over 1 KB": 1}
    assert not {"src/net.py", "src/shapes.py"} & {hit.path for hit in bounded.search("reach server area", 10)}
    bounded.update(repo / "src" / "shapes.py")  # a save of an excluded file indexes nothing
    assert "src/shapes.py" not in {hit.path for hit in bounded.search("area width height", 5)}


@pytest.mark.parametrize(
    ("shown", "patterns", "left_out"),
    [
        ("tests/fixtures/a.py", ["**/fixtures"], True),
        ("fixtures/a.py", ["**/fixtures"], True),
        ("a/fixtures/b/c.py", ["fixtures"], True),  # no `/`: a name at any depth
        ("docs/a.md", ["docs/*.md"], True),
        ("docs/x/a.md", ["docs/*.md"], False),  # `*` stays within a name
        ("docs/x/a.md", ["docs/**/*.md"], True),
        ("static/app.min.js", ["*.min.js"], True),
        ("src/app.js", ["*.min.js"], False),
        ("src/vendor.py", ["vendor"], False),
    ],
)
def test_exclude_globs_match_as_gitignore_does(shown: str, patterns: list[str], left_out: bool):
    assert codebase.excluded(shown, patterns) is left_out


def test_exclude_globs_are_checked_as_settings(tmp_path: Path):
    merged, warnings = settings.merge(settings.Settings(), {"codebaseExclude": ["**/fixtures", " "]})
    assert merged.codebase_exclude == ("**/fixtures",) and not warnings
    for bad in ("**/fixtures", [3], ["x" * 501], ["a"] * 201):
        merged, warnings = settings.merge(settings.Settings(), {"codebaseExclude": bad})
        assert merged.codebase_exclude == () and warnings and "codebaseExclude" in warnings[0], warnings


def test_the_index_is_bounded_and_survives_files_that_vanish(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    root = tmp_path / "many"
    root.mkdir()
    for n in range(30):
        (root / f"m{n:02}.py").write_text(f"def function_{n}():\n    pass\n")
    monkeypatch.setattr(codebase, "MAX_FILES", 20)
    vanished: list[str] = []

    def pause() -> None:  # a file removed while the index is being built
        if not vanished:
            (root / "m19.py").unlink()
            vanished.append("m19.py")

    index = CodebaseIndex([root])
    index.build(pause=pause)
    assert index.n_files == 19 and index.skipped.counts == {"past 20 files": 10}
    assert index.ready


def test_progress_is_reported_and_pause_runs_between_files_and_the_merges_steps(repo: Path):
    seen: list[tuple[int, int]] = []
    pauses: list[int] = []
    index = CodebaseIndex([repo])
    index.build(pause=lambda: pauses.append(1), progress=lambda done, total: seen.append((done, total)))
    # Once as git's list is read (then every LIST_PAUSE_EVERY files), before each file, and between
    # the merge's 3 steps.
    assert seen[-1] == (5, 5) and len(pauses) == 1 + 5 + 2
    # Where git lists nothing, the walk pauses before each directory: 10,000 files are 0.4 s of Python.
    shutil.rmtree(repo / ".git")
    pauses.clear()
    CodebaseIndex([repo]).listed_files(pause=lambda: pauses.append(1))
    assert len(pauses) == 4 + 1  # the folder, src/, tests/, ignored/ (no git to ignore it); the list


def test_the_search_tool_answers_a_sentence_with_the_indexs_code(repo: Path):
    index = CodebaseIndex([repo])
    index.build()
    runner = ToolRunner(WorkspaceFiles([repo]), index=index)
    outcome = runner.run("search", {"pattern": "the delay doubles after every failed attempt"})
    lines = outcome.text.splitlines()
    assert lines[0].startswith("No line matches") and "code that best matches its words" in lines[0]
    assert lines[1] == "src/net.py:8: def reach_server(server, attempts=3):", outcome.text
    assert outcome.ok and not outcome.found_nothing


# ---- over LSP: the server's own index of the test workspace ----------------------------------------------

SERVER_OPTIONS = {"model": "qwen2.5-coder-0.5b", "contextSize": 2048, "slots": 1, "maxTokens": 32}


async def indexed(client: AssistantClient, query: str) -> dict[str, Any]:
    """The search's result once the index is built."""
    for _ in range(300):
        result = await client.request(protocol.SEARCH_CODEBASE, {"query": query})
        if result["indexed"]["ready"]:
            return result
        await asyncio.sleep(0.1)
    raise AssertionError(f"the index was not built: {result}")


@pytest.mark.asyncio(loop_scope="module")
async def test_search_codebase_finds_the_function_and_follows_the_editors_text(
    client: AssistantClient, workspace: Path
):
    result = await indexed(client, "restock an item, adding to its quantity")
    first = result["results"][0]
    assert first["uri"] == (workspace / "inventory.py").as_uri() and first["symbol"] == "restock", result
    assert first["snippet"].startswith("def restock(") and first["range"]["start"]["character"] == 0
    assert result["indexed"]["files"] == 3 and result["indexed"]["chunks"] > 3
    # A function the editor holds but the disk does not: indexed once typing pauses.
    uri = open_document(client, workspace / "inventory.py")
    text = (workspace / "inventory.py").read_text() + "\n\ndef zebra_crossing_signal():\n    return 'walk'\n"
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )
    for _ in range(50):
        found = await client.request(protocol.SEARCH_CODEBASE, {"query": "zebra crossing signal", "limit": 1})
        if found["results"]:
            break
        await asyncio.sleep(0.1)
    assert found["results"][0]["symbol"] == "zebra_crossing_signal", found


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("params", [{}, {"query": " "}, {"query": "x", "limit": 0}, {"query": 3}])
async def test_search_codebase_refuses_bad_params_and_keeps_serving(client: AssistantClient, params: Any):
    with pytest.raises(JsonRpcException) as error:
        await client.request(protocol.SEARCH_CODEBASE, params)
    assert error.value.code == -32602 and error.value.message
    assert (await client.request(protocol.SEARCH_CODEBASE, {"query": "restock"}))["results"]


async def test_the_index_follows_its_settings_while_the_server_runs(
    repo: Path,
    rendered_probe: str,  # noqa: F811
):
    model = ScriptedModel([], rendered_probe)  # the index needs no model; the backend needs one to load
    threading.Thread(target=model.serve_forever, daemon=True).start()
    backend = {"url": model.url, "model": "scripted"}
    cache = {"cacheDir": str(repo.parent / "cache")}  # not the user's: the index is saved there
    try:
        async with language_server(repo, backend, options={"codebaseIndex": False, **cache}) as client:
            found = await client.request(protocol.SEARCH_CODEBASE, {"query": "area width height"})
            assert found == {"results": [], "indexed": {"files": 0, "chunks": 0, "ready": False}}

            def configure(**options: Any) -> None:
                settings = {"backend": backend, **cache, **options}
                client.workspace_did_change_configuration(
                    types.DidChangeConfigurationParams(settings={"llamaLsp": settings})
                )

            configure(codebaseIndex=True)  # turned on: built, without a restart
            found = await indexed(client, "area width height")
            assert found["results"][0]["symbol"] == "area" and found["indexed"]["files"] == 5
            configure(codebaseIndex=True, codebaseExclude=["src/shapes.py"])  # built again without it
            for _ in range(300):
                found = await client.request(protocol.SEARCH_CODEBASE, {"query": "area width height"})
                if found["indexed"]["ready"] and found["indexed"]["files"] == 4:
                    break
                await asyncio.sleep(0.1)
            assert found["indexed"]["files"] == 4, found
            assert all(result.get("symbol") != "area" for result in found["results"]), found
            configure(codebaseIndex=False)  # turned off: dropped
            found = await client.request(protocol.SEARCH_CODEBASE, {"query": "area width height"})
            assert found["indexed"] == {"files": 0, "chunks": 0, "ready": False}
    finally:
        model.shutdown()
        model.server_close()


@pytest.mark.parametrize("merge_files", [codebase.MERGE_FILES, 2])
def test_the_ranker_scores_as_bm25s_does(repo: Path, merge_files: int, monkeypatch: pytest.MonkeyPatch):
    """The index builds BM25's matrix with numpy, merging files in as the build reads them (every 2 files:
    three merges here); bm25s (a Python loop per chunk) is the reference."""
    monkeypatch.setattr(codebase, "MERGE_FILES", merge_files)
    index = CodebaseIndex([repo])
    index.build()
    shown_paths = sorted(index.listed_files())
    cut = [
        (shown, chunk, chunk_words)
        for shown in shown_paths
        for chunk, chunk_words in codebase.chunks_of(shown, (repo / shown).read_text())
    ]
    reference = bm25s.BM25()
    reference.index([chunk_words or [""] for _, _, chunk_words in cut], show_progress=False)
    weights = np.array([codebase.file_weight(shown) for shown, _, _ in cut])
    chunks = [(shown, chunk.start_line) for shown, chunk, _ in cut]
    for query in ("reach server retry delay", "area width height", "session close", "net"):
        wanted = [word for word in dict.fromkeys(codebase.words(query)) if word in reference.vocab_dict]
        expected = np.asarray(reference.get_scores(wanted)) if wanted else np.zeros(len(cut))
        # The chunks' own scores, before search adds their files' evidence (tested below).
        found = {
            (shown, chunk.start_line): score for shown, chunk, score in index._best_chunks(query, len(cut))
        }
        for key, score in zip(chunks, expected * weights, strict=True):
            assert found.get(key, 0.0) == pytest.approx(float(score), abs=1e-4), (query, key)


def test_a_file_with_several_matching_chunks_ranks_above_one_that_mentions_the_words_once(tmp_path: Path):
    """Search adds to each chunk what its file's other matching chunks say: the module that handles
    retries in three functions outranks the one whose single function has the words a little more
    densely, and the module's chunks stay in their own order behind its best."""
    (tmp_path / "retries.py").write_text(
        "def next_delay(attempt, backoff):\n    # the retry waits longer each time\n"
        "    return backoff.base * 2 ** attempt\n\n\n"
        "def give_up(attempt, config):\n    # no retry after the last attempt, whatever the delay\n"
        "    return attempt >= config.attempts\n\n\n"
        "def send_again(request, attempt, backoff):\n    # a retry sends the request after its delay\n"
        "    time.sleep(next_delay(attempt, backoff))\n    return request.send()\n"
    )
    (tmp_path / "log.py").write_text("def log_retry(retry_delay):\n    print('retry delay', retry_delay)\n")
    for name in ("session", "cookies", "urls"):
        (tmp_path / f"{name}.py").write_text(f"def {name}_open(path):\n    return open(path)\n")
    index = CodebaseIndex([tmp_path])
    index.build()
    own = index._best_chunks("retry delay", 10)
    assert own[0][0] == "log.py", own  # alone, the one function that mentions them most
    hits = index.search("retry delay", 10)
    assert [hit.path for hit in hits] == ["retries.py", "retries.py", "retries.py", "log.py"], hits
    order = [(shown, chunk.start_line) for shown, chunk, _ in own if shown == "retries.py"]
    assert [(hit.path, hit.start_line) for hit in hits[:3]] == order
    assert [path for path, _ in index.rank_files("retry delay")] == ["retries.py", "log.py"]


def all_scores(index: CodebaseIndex, queries: list[str]) -> list[list[tuple[str, int, float]]]:
    return [[(hit.path, hit.start_line, hit.score) for hit in index.search(query, 100)] for query in queries]


def test_a_search_during_a_refresh_answers_at_once_from_the_last_ranker_and_the_changed_files(repo: Path):
    index = CodebaseIndex([repo])
    index.build()
    before = index._ranker
    release = threading.Event()

    def pause() -> None:  # the refresh waits, as while the model works
        release.wait(30)

    index.pause = pause
    (repo / "src" / "shapes.py").write_text(
        "def parallelogram_area(base, height):\n    return base * height\n"
    )
    index.update(repo / "src" / "shapes.py")
    (repo / "src" / "new.py").write_text("def trapezoid_area(top, bottom, height):\n    return 0\n")
    index.update(repo / "src" / "new.py")
    (repo / "README.md").unlink()
    index.update(repo / "README.md")
    try:
        started = time.perf_counter()
        hits = index.search("parallelogram area")
        assert time.perf_counter() - started < 1.0
        assert not index.refreshed(timeout=0.05) and index._ranker is before  # the refresh waits
        # The changed files' new chunks are found; their old ones and the removed file's are not.
        assert (hits[0].path, hits[0].symbol) == ("src/shapes.py", "parallelogram_area")
        assert index.search("trapezoid")[0].path == "src/new.py"
        assert all(hit.symbol != "area" for hit in index.search("area width height", 20))
        assert all(hit.path != "README.md" for hit in index.search("net reach server retry delay", 20))
        assert index.definitions("parallelogram_area") == [("src/shapes.py", 1, 2)]
        assert index.definitions("area") == []
        assert index.n_files == 5 and index.n_chunks == len(index.chunks())
    finally:
        release.set()
    assert index.refreshed(timeout=30) and index._ranker is not before
    fresh = CodebaseIndex([repo])
    fresh.build()
    queries = ["parallelogram area", "trapezoid height", "reach server retry delay", "session close net"]
    assert all_scores(index, queries) == all_scores(fresh, queries)  # as if built from scratch


def test_the_ranker_refreshed_after_many_changes_equals_one_built_from_scratch(repo: Path):
    index = CodebaseIndex([repo])
    index.build()
    for round_ in range(3):
        (repo / "src" / f"extra{round_}.py").write_text(f"def retry_{round_}(server):\n    return server\n")
        index.update(repo / "src" / f"extra{round_}.py")
        index.update(repo / "src" / "net.py", RETRY.replace("delay", f"pause{round_}"))  # the editor's text
        index.search("retry server")  # starts a refresh; the next changes come while it runs
    (repo / "src" / "extra1.py").unlink()
    index.update(repo / "src" / "extra1.py")
    index.search("retry")
    assert index.refreshed(timeout=30)
    index.search("retry")  # the changes made during the last refresh
    assert index.refreshed(timeout=30) and not index._pending
    (repo / "src" / "net.py").write_text(RETRY.replace("delay", "pause2"))
    fresh = CodebaseIndex([repo])
    fresh.build()
    queries = ["retry server", "reach server pause", "delay doubles", "session close area"]
    assert all_scores(index, queries) == all_scores(fresh, queries)
    assert index.definitions("retry_2") == fresh.definitions("retry_2") == [("src/extra2.py", 1, 2)]


def test_a_saved_index_whose_arrays_do_not_hold_together_is_not_read(repo: Path):
    index = CodebaseIndex([repo])
    index.build()
    saved = repo.parent / "index.npz"
    index.save(saved)
    with np.load(saved) as arrays:
        good = dict(arrays)
    for name, bad in [
        ("rows", good["rows"] + 1000),
        ("counts", np.zeros_like(good["counts"])),
        ("starts", good["starts"][:-1]),
        ("lines", good["lines"].astype(np.int64)),
        ("paths", good["paths"][: good["paths"].tobytes().rindex(b"\0")]),  # a file fewer
        ("symbols", good["symbols"][:0]),
    ]:
        np.savez(saved, **{**good, name: bad})
        again = CodebaseIndex([repo])
        assert again.load(saved) is False and again.n_files == 0, name
    np.savez(saved, **good)
    assert CodebaseIndex([repo]).load(saved)
    whole = saved.read_bytes()
    for broken in (
        whole[: len(whole) // 2],
        whole[:200] + bytes(200) + whole[400:],
    ):  # cut short, overwritten
        saved.write_bytes(broken)
        assert CodebaseIndex([repo]).load(saved) is False


def test_a_refresh_stopped_midway_leaves_the_last_ranker_and_the_changes_searchable(repo: Path):
    index = CodebaseIndex([repo])
    index.build()
    before = index._ranker
    steps: list[int] = []

    def stop_at_the_merges_second_step() -> None:  # the server shutting down while a merge runs
        steps.append(1)
        if len(steps) == 3:
            raise codebase.Stopped

    index.pause = stop_at_the_merges_second_step
    index.update(repo / "src" / "shapes.py", "def rhombus_area(d1, d2):\n    return d1 * d2 / 2\n")
    assert index.search("rhombus")[0].symbol == "rhombus_area"
    assert index.refreshed(timeout=30) and index._ranker is before and len(steps) == 3
    assert index.search("rhombus")[0].symbol == "rhombus_area"  # still from the changes; a refresh again
    assert index.refreshed(timeout=30) and index._ranker is not before and not index._pending


class IndexingServer:
    """What WorkspaceIndex needs of the language server, with the model's work switched by the test."""

    def __init__(self, root: Path, cache: Path) -> None:
        self.workspace = Workspace(root.as_uri())
        self.settings = settings.Settings(cache_dir=cache)
        self.model_working = False

    async def begin_progress(self, token: str, title: str) -> bool:
        return False

    def report_progress(self, token: str, message: str, percentage: int | None = None) -> None:
        pass

    def end_progress(self, token: str, message: str) -> None:
        pass


async def test_files_changed_on_disk_are_indexed_in_a_thread_that_waits_while_the_model_works(repo: Path):
    server = IndexingServer(repo, repo.parent / "cache")
    workspace_index = WorkspaceIndex(server)
    workspace_index.start()
    for _ in range(300):
        if (await workspace_index.search("area width height", 1))["indexed"]["ready"]:
            break
        await asyncio.sleep(0.05)
    server.model_working = True  # a chat is being answered: the index waits
    changes = []
    for n in range(20):  # as a branch switch would name them
        (repo / "src" / f"branch{n}.py").write_text(f"def octagon_{n}(side):\n    return side * {n}\n")
        changes.append(
            types.FileEvent(uri=(repo / "src" / f"branch{n}.py").as_uri(), type=types.FileChangeType.Created)
        )
    try:
        started = time.perf_counter()
        workspace_index.files_changed(types.DidChangeWatchedFilesParams(changes=changes))
        found = await workspace_index.search("octagon side", 5)
        assert time.perf_counter() - started < 1.0 and found["results"] == []  # answered; not indexed yet
    finally:
        server.model_working = False
    for _ in range(300):
        found = await workspace_index.search("octagon side", 50)
        if len(found["results"]) == 20:
            break
        await asyncio.sleep(0.05)
    assert len(found["results"]) == 20 and found["indexed"]["files"] == 25, found
    workspace_index.stop()


async def test_the_index_saved_in_the_older_format_is_deleted_once_the_new_one_is_saved(repo: Path):
    server = IndexingServer(repo, repo.parent / "cache")
    workspace_index = WorkspaceIndex(server)
    saved = workspace_index._saved_path([repo])
    older = saved.with_name(saved.name.removesuffix(".npz") + ".json.gz")
    another_workspaces = saved.with_name("0123456789abcdef.json.gz")
    older.parent.mkdir(parents=True)
    older.write_bytes(gzip.compress(b'{"version": 2}'))
    another_workspaces.write_bytes(gzip.compress(b'{"version": 2}'))
    workspace_index.start()
    assert workspace_index._building is not None
    await asyncio.wait_for(workspace_index._building, 30)
    assert saved.exists() and not older.exists()
    assert another_workspaces.exists()  # deleted when that workspace's index is saved
    workspace_index.stop()
