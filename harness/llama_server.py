"""llama.cpp's own llama-server, the remote backend the tests run against (and the bench's baseline):
the build from the pinned source (`make llama-server`), started on 127.0.0.1 on a free port, as a team
would start it."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BINARY = ROOT / "build" / "native" / "bin" / "llama-server"


def free_port() -> int:
    with socket.socket() as probe:  # another program could take it meanwhile; unlikely on 127.0.0.1
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class LlamaServer:
    """One llama-server process serving `model` under `name` (None: no alias, so it lists the file, as
    `llama-server -m FILE` does); start() waits until it answers."""

    def __init__(
        self,
        model: Path,
        name: str | None,
        log: Path,
        *options: str,
        port: int | None = None,
        binary: Path = BINARY,
        threads: int = 2,
        flash_attn: str = "on",
    ):
        self.model, self.name, self.log, self.options = model, name, log, options
        self.port = port or free_port()
        self.binary, self.threads, self.flash_attn = binary, threads, flash_attn
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def backend(self, **more: str) -> dict[str, str]:
        """The `backend` setting that points the language server here (naming no model if it has no name)."""
        return {"url": self.url, **({"model": self.name} if self.name else {}), **more}

    def start(self, timeout_s: float = 180.0) -> LlamaServer:
        if not self.binary.is_file():
            raise RuntimeError(f"{self.binary} is missing: `make llama-server` builds it (`make test` does)")
        command = [
            str(self.binary),
            *("-m", str(self.model), *(("-a", self.name) if self.name else ()), "--jinja"),
            *("-fa", self.flash_attn),
            *("-t", str(self.threads), "-tb", str(self.threads)),
            *("--host", "127.0.0.1", "--port", str(self.port)),
            *self.options,
        ]
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"llama-server exited ({self.process.returncode}):\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2) as answer:
                    if json.load(answer).get("status") == "ok":
                        return self
            except OSError:
                pass  # not listening yet, or still loading (503)
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"llama-server was not ready after {timeout_s:.0f} s:\n{self.log_tail()}")

    def kill(self) -> None:
        """Gone at once, mid-answer: what a crash or a pulled cable looks like to the client."""
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.kill()

    def log_tail(self) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-20:])
