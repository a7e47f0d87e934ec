"""The workspaces of eval/chat's cases: each repository's tree at a case's parent commit, from a local mirror.

A mirror is a bare git directory of the public repository, <mirrors>/<owner>+<name>/repo, as the
agent tool `fetch` (source "github:<owner>/<name>") leaves under /work/.mirror; any bare or normal
clone with that history works (`git clone --mirror https://github.com/<owner>/<name>
<mirrors>/<owner>+<name>/repo`). The tree is written once per (repository, commit) into the cache
folder (<cache>/<owner>+<name>/<commit>) and reused; nothing of it goes into this repository.

    .venv/bin/python eval/chat/snapshots.py               # every case's workspace; prints the folders
    .venv/bin/python eval/chat/snapshots.py --mirrors DIR --cache DIR

LLAMA_LSP_MIRRORS and LLAMA_LSP_CHAT_SNAPSHOTS set the defaults of --mirrors and --cache.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
MIRRORS = Path(os.environ.get("LLAMA_LSP_MIRRORS", "/work/.mirror"))
CACHE = Path(
    os.environ.get("LLAMA_LSP_CHAT_SNAPSHOTS")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "llama-lsp-eval-chat"
)


class MissingMirror(Exception):
    pass


def mirror(repo: str, mirrors: Path = MIRRORS) -> Path:
    """The git directory of `repo` ("owner/name") under `mirrors`."""
    return mirrors / repo.replace("/", "+") / "repo"


@dataclass
class Repo:
    name: str  # owner/name
    mirrors: Path = MIRRORS

    @property
    def git_dir(self) -> Path:
        return mirror(self.name, self.mirrors)

    def git(self, *arguments: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["git", f"--git-dir={self.git_dir}", *arguments],
            capture_output=True,
            text=True,
            check=True,
            **kwargs,  # type: ignore[call-overload]
        )

    def check(self, commit: str = "HEAD") -> None:
        """Raises MissingMirror, saying how to get it, when the mirror or the commit is not here."""
        how = (
            f'fetch it with the agent tool `fetch` (source "github:{self.name}"), or '
            f"`git clone --mirror https://github.com/{self.name} {self.git_dir}`; "
            "--mirrors (LLAMA_LSP_MIRRORS) says where the mirrors are"
        )
        if not self.git_dir.is_dir():
            raise MissingMirror(f"no mirror of {self.name} at {self.git_dir}: {how}")
        found = subprocess.run(
            ["git", f"--git-dir={self.git_dir}", "cat-file", "-e", f"{commit}^{{commit}}"],
            capture_output=True,
        )
        if found.returncode != 0:
            raise MissingMirror(f"the mirror {self.git_dir} has no commit {commit}: {how} again")

    def files(self, commit: str) -> list[str]:
        """The paths of the tree at `commit`, relative to its root."""
        return self.git("ls-tree", "-r", "-z", "--name-only", commit).stdout.rstrip("\0").split("\0")

    def snapshot(self, commit: str, cache: Path = CACHE) -> Path:
        """The folder holding the tree at `commit`, written on first use. Every file as committed:
        checkout-index, not `git archive`, which leaves out export-ignore paths and rewrites
        export-subst files."""
        folder = cache / self.name.replace("/", "+") / commit
        complete = folder.with_name(f"{commit}.complete")  # beside the tree, which the model lists
        if complete.exists():
            return folder
        self.check(commit)
        folder.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=folder.parent, prefix=f".{commit[:12]}-") as temp:
            tree = Path(temp) / "tree"
            tree.mkdir()
            env = {**os.environ, "GIT_INDEX_FILE": str(Path(temp) / "index")}
            self.git("read-tree", commit, env=env)
            self.git(f"--work-tree={tree}", "checkout-index", "--all", env=env)
            shutil.rmtree(folder, ignore_errors=True)  # a half-written one from an interrupted run
            tree.rename(folder)
        complete.write_text(f"{self.name} {commit}\n")
        return folder


def load_cases(path: Path = HERE / "cases.json") -> list[dict]:
    return json.loads(path.read_text())


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mirrors", type=Path, default=MIRRORS, help=f"where the mirrors are ({MIRRORS})")
    parser.add_argument("--cache", type=Path, default=CACHE, help=f"where the trees go ({CACHE})")
    args = parser.parse_args()
    status = 0
    done: set[tuple[str, str]] = set()
    for case in load_cases():
        key = (case["repo"], case["parent"])
        if key in done:
            continue
        done.add(key)
        try:
            print(Repo(case["repo"], args.mirrors).snapshot(case["parent"], args.cache))
        except MissingMirror as exc:
            print(exc, file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
