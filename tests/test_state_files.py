"""Saved slot state is untrusted input: index.json and the state files are whatever is on disk.

Every test drives the real native engine on the tiny model. An attack must never touch a file outside
the state directory, block the engine, crash it or leave a slot holding other cells than its record
says; the prompt is then evaluated cold, with the same greedy tokens as a cold engine.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import shutil
import struct
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.tiny_model import vocabulary
from lsp_server.engine import native

from .conftest import open_engine

PROMPT = "def save(state): return write(state) " * 4
FOLLOW_UP = PROMPT + " more"
N_VOCAB = len(vocabulary()[0])
OPTIONS: dict[str, Any] = {"n_ctx": 1024, "prefill_chunk": 16, "n_slots": 3}
TIMEOUT_S = 60  # far above a tiny-model request; only a blocked engine gets near it


def open_tiny(path: Path, **options: Any) -> native.NativeEngine:
    return open_engine(path, **{**OPTIONS, **options})


def run(e: native.NativeEngine, prompt: str, slot: str = "s") -> dict[str, Any]:
    return e.generate({"prompt": prompt, "max_tokens": 8, "slot": slot})


def within(seconds: float, fn: Callable[[], Any], unblock: Callable[[], None] | None = None) -> Any:
    """fn's result; fails the test instead of hanging it when fn has not returned after seconds."""
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = fn()
        except BaseException as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        if unblock:
            unblock()  # so that the stuck call returns and the test run can end
        thread.join(10)
        pytest.fail(f"the engine was still blocked after {seconds} s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def open_fifo_writer(path: Path) -> Callable[[], None]:
    """Releases a reader blocked in opening the FIFO at path (it then reads end of file)."""

    def unblock() -> None:
        with contextlib.suppress(OSError):  # no reader is waiting
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))

    return unblock


def read_index(state: Path) -> dict[str, Any]:
    return json.loads((state / "index.json").read_text())


def write_index(state: Path, index: dict[str, Any]) -> None:
    (state / "index.json").write_text(json.dumps(index))


def slot_file(state: Path) -> Path:
    (entry,) = read_index(state)["slots"]
    return state / entry["file"]


@pytest.fixture
def warnings(caplog: pytest.LogCaptureFixture) -> Callable[[], str]:
    """The engine's warnings so far, which say why a saved slot was refused."""
    caplog.set_level(logging.WARNING, logger=native.log.name)
    return lambda: "\n".join(r.getMessage() for r in caplog.records if r.name == native.log.name)


@pytest.fixture(scope="module")
def cold_follow_up(tiny_model: Path) -> list[int]:
    """The reference answer to FOLLOW_UP, from an engine that never saw it."""
    e = open_tiny(tiny_model)
    try:
        result = run(e, FOLLOW_UP)
        assert result["stats"]["n_reused"] == 0
        return list(result["tokens"])
    finally:
        e.close()


@pytest.fixture
def engine(tiny_model: Path) -> Iterator[native.NativeEngine]:
    e = open_tiny(tiny_model)
    yield e
    e.close()


def save_prompt(model: Path, state: Path, prompt: str = PROMPT, slot: str = "s") -> None:
    e = open_tiny(model)
    try:
        run(e, prompt, slot=slot)
        assert e.save_slots(state)["saved"] >= 1
    finally:
        e.close()


@pytest.fixture
def state(tiny_model: Path, tmp_path: Path) -> Path:
    """A state directory holding one saved slot: PROMPT, under the key "s"."""
    directory = tmp_path / "state"
    save_prompt(tiny_model, directory)
    return directory


def assert_cold(result: dict[str, Any], cold_follow_up: list[int]) -> None:
    assert result["stats"]["n_reused"] == 0
    assert result["tokens"] == cold_follow_up


# ---- the normal path ----------------------------------------------------------------------------


def test_saved_slot_is_reused_with_the_same_tokens_as_cold(engine, state, cold_follow_up):
    assert engine.restore_slots(state) == {"known": 1}
    result = run(engine, FOLLOW_UP)
    assert result["stats"]["n_reused"] > 0
    assert result["tokens"] == cold_follow_up


# ---- index entries naming files outside the state directory --------------------------------------


@pytest.mark.parametrize("spelling", ["absolute", "dot-dot", "dot-dot inside", "subdirectory"])
@pytest.mark.parametrize("content", ["a valid state", "a precious file"])
def test_index_naming_a_file_outside_the_directory_never_touches_it(
    engine, state, tmp_path, cold_follow_up, spelling, content
):
    victim = tmp_path / "victim.bin"
    shutil.copy(slot_file(state), victim)
    if content == "a precious file":  # loading it fails: the old code then deleted it
        victim.write_bytes(b"precious")
    before = victim.read_bytes()
    (state / "sub").mkdir()
    file = {
        "absolute": str(victim),
        "dot-dot": "../victim.bin",
        "dot-dot inside": "sub/../../victim.bin",
        "subdirectory": "sub/slot-0.bin",
    }[spelling]
    if spelling == "subdirectory":
        victim = state / "sub" / "slot-0.bin"
        shutil.copy(tmp_path / "victim.bin", victim)
    index = read_index(state)
    index["slots"][0]["file"] = file
    write_index(state, index)

    assert engine.restore_slots(state) == {"known": 0, "ignored": 1}
    assert_cold(run(engine, FOLLOW_UP), cold_follow_up)
    engine.save_slots(state)
    assert victim.read_bytes() == before


# ---- files that are not regular files -------------------------------------------------------------


def replace_with(path: Path, kind: str, outside: Path) -> Callable[[], None] | None:
    """Puts a non-regular file of the kind at path; returns how to unblock a reader, if one can block."""
    shutil.copy(path, outside / "copy.bin")  # a valid state, so only the file's type is wrong
    path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
        return open_fifo_writer(path)
    if kind == "directory":
        path.mkdir()
        (path / "inside").write_text("keep me")
    elif kind == "symlink":
        path.symlink_to(outside / "copy.bin")
    return None


NON_REGULAR = ["fifo", "directory", "symlink"]


@pytest.mark.parametrize("kind", NON_REGULAR)
def test_non_regular_state_file_is_ignored_at_restore(engine, state, tmp_path, cold_follow_up, kind):
    unblock = replace_with(slot_file(state), kind, tmp_path)
    assert within(TIMEOUT_S, lambda: engine.restore_slots(state), unblock) == {"known": 0, "ignored": 1}
    assert_cold(within(TIMEOUT_S, lambda: run(engine, FOLLOW_UP), unblock), cold_follow_up)


@pytest.mark.parametrize("kind", NON_REGULAR)
def test_state_file_replaced_after_restore_is_refused_without_blocking(
    engine, state, tmp_path, cold_follow_up, warnings, kind
):
    assert engine.restore_slots(state) == {"known": 1}
    path = slot_file(state)
    unblock = replace_with(path, kind, tmp_path)
    result = within(TIMEOUT_S, lambda: run(engine, FOLLOW_UP), unblock)
    assert_cold(result, cold_follow_up)
    assert "not a regular file" in warnings()
    # what a symlink points to, and what a directory holds, are not ours to delete
    assert (tmp_path / "copy.bin").exists()
    if kind == "directory":
        assert (path / "inside").read_text() == "keep me"


def test_index_that_is_a_fifo_does_not_block_restore(engine, state):
    index = state / "index.json"
    index.unlink()
    os.mkfifo(index)
    restored = within(TIMEOUT_S, lambda: engine.restore_slots(state), open_fifo_writer(index))
    assert restored["known"] == 0
    assert "not a regular file" in restored["discarded"]


# ---- sizes and contents that do not add up -----------------------------------------------------


@pytest.mark.parametrize("when", ["before restore", "after restore"])
def test_state_file_larger_than_a_full_slot_is_refused(engine, state, cold_follow_up, warnings, when):
    path = slot_file(state)

    def grow() -> None:
        os.truncate(path, 1 << 30)  # sparse: a valid state, then a gigabyte of holes

    if when == "before restore":
        grow()
        assert engine.restore_slots(state) == {"known": 0, "ignored": 1}
    else:
        assert engine.restore_slots(state) == {"known": 1}
        grow()
    assert_cold(run(engine, FOLLOW_UP), cold_follow_up)
    assert "larger than" in warnings()


def test_state_file_with_data_after_the_state_is_refused(engine, state, cold_follow_up, warnings):
    path = slot_file(state)
    path.write_bytes(path.read_bytes() + b"\0" * 16)
    assert engine.restore_slots(state) == {"known": 1}
    assert_cold(run(engine, FOLLOW_UP), cold_follow_up)
    assert "data after the state" in warnings()
    assert not path.exists()


def stream_count_offset(data: bytes) -> int:
    """Where the KV cache's part of a state file starts: magic, version, token count, tokens come first."""
    (n_tokens,) = struct.unpack_from("<I", data, 8)
    return 12 + 4 * n_tokens


def first_cells(data: bytes) -> int:
    """Where the cell count of the one stream holding cells sits in a state file of the tiny model."""
    offset = stream_count_offset(data)
    (n_stream,) = struct.unpack_from("<I", data, offset)
    offset += 4
    for _ in range(n_stream):
        (n_cells,) = struct.unpack_from("<I", data, offset)
        if n_cells:
            return offset
        offset += 4
    raise AssertionError("no stream holds cells")


def corrupt(data: bytes, how: str) -> bytes:
    out = bytearray(data)
    cells = first_cells(data)
    (n_cells,) = struct.unpack_from("<I", data, cells)
    # each cell: position (int32), number of sequences (uint32), sequence id (int32)
    cell = [cells + 4 + 12 * i for i in range(n_cells)]
    assert [struct.unpack_from("<iI", data, at) for at in cell] == [(pos, 1) for pos in range(n_cells)]
    if how == "random bytes":
        return random.Random(0).randbytes(len(data))
    if how == "cut after the tokens":
        return data[: stream_count_offset(data)]
    if how == "wrong magic":
        out[0] ^= 1
    elif how == "more cells than a slot":
        struct.pack_into("<I", out, cells, 0xFFFFFFFF)
    elif how == "first cell at position 1":
        struct.pack_into("<i", out, cell[0], 1)
    elif how == "cells shifted by one":
        for at in cell:
            struct.pack_into("<i", out, at, struct.unpack_from("<i", data, at)[0] + 1)
    elif how == "a cell at position -1":
        struct.pack_into("<i", out, cell[0], -1)
    elif how == "a cell at the largest position":
        struct.pack_into("<i", out, cell[-1], 2**31 - 1)
    elif how == "a cell at the largest position, then a wrong layer count":
        struct.pack_into("<i", out, cell[-1], 2**31 - 1)
        struct.pack_into("<I", out, cell[-1] + 12 + 4, 1)  # after the cells: V transposed?, layer count
    elif how == "a cell in two sequences":
        struct.pack_into("<I", out, cell[0] + 4, 2)
    elif how == "wrong stream count":
        struct.pack_into("<I", out, stream_count_offset(data), 7)
    return bytes(out)


@pytest.mark.parametrize(
    "how",
    [
        "random bytes",
        "cut after the tokens",
        "wrong magic",
        "more cells than a slot",
        "first cell at position 1",
        "cells shifted by one",
        "a cell at position -1",
        "a cell at the largest position",
        "a cell at the largest position, then a wrong layer count",
        "a cell in two sequences",
        "wrong stream count",
    ],
)
def test_garbage_state_file_is_refused_and_the_slots_stay_sound(engine, state, cold_follow_up, how):
    other = "class Other: pass " * 6
    other_tokens = run(engine, other, slot="other")["tokens"]
    path = slot_file(state)
    path.write_bytes(corrupt(path.read_bytes(), how))
    assert engine.restore_slots(state) == {"known": 1}
    assert_cold(run(engine, FOLLOW_UP), cold_follow_up)
    assert not path.exists()
    # the slots hold what their records say: the same prompt now reuses its slot, with the same answer
    again = run(engine, FOLLOW_UP)
    assert again["stats"]["n_reused"] > 0
    assert again["tokens"] == cold_follow_up
    assert run(engine, other, slot="other")["tokens"] == other_tokens


@pytest.mark.parametrize("change", ["fewer", "more", "different"])
def test_state_file_whose_tokens_disagree_with_the_index_is_refused(
    engine, state, cold_follow_up, warnings, change
):
    index = read_index(state)
    tokens = index["slots"][0]["tokens"]
    if change == "fewer":
        tokens[:] = tokens[:-20]
    elif change == "more":
        tokens.append(tokens[-1])
    else:
        tokens[-1] = (tokens[-1] + 1) % 256
    write_index(state, index)
    assert engine.restore_slots(state) == {"known": 1}
    assert_cold(run(engine, FOLLOW_UP), cold_follow_up)
    assert "ignoring saved slot state" in warnings()
    assert not slot_file(state).exists()


# ---- index entries that are not what we write ---------------------------------------------------


def bad_entry(good: dict[str, Any], how: str, n_ctx_slot: int) -> Any:
    entry = {**good, "key": "other", "file": "saved-7.bin"}
    if how == "not an object":
        return ["saved-7.bin"]
    if how == "no key":
        del entry["key"]
    elif how == "key not a string":
        entry["key"] = 123
    elif how == "file not a string":
        entry["file"] = 7
    elif how == "file listed twice":
        entry["file"] = good["file"]
    elif how == "token outside the vocabulary":
        entry["tokens"] = [*good["tokens"][:-1], N_VOCAB]
    elif how == "negative token":
        entry["tokens"] = [*good["tokens"][:-1], -1]
    elif how == "fractional token":
        entry["tokens"] = [*good["tokens"][:-1], 1.5]
    elif how == "token a string":
        entry["tokens"] = [*good["tokens"][:-1], "a"]
    elif how == "token a boolean":
        entry["tokens"] = [*good["tokens"][:-1], True]
    elif how == "huge token":
        entry["tokens"] = [*good["tokens"][:-1], 2**64 - 1]
    elif how == "more tokens than a slot holds":
        entry["tokens"] = good["tokens"] * (n_ctx_slot // len(good["tokens"]) + 1)
    elif how == "no tokens":
        entry["tokens"] = []
    elif how == "tokens not a list":
        entry["tokens"] = "1 2 3"
    return entry


@pytest.mark.parametrize(
    "how",
    [
        "not an object",
        "no key",
        "key not a string",
        "file not a string",
        "file listed twice",
        "token outside the vocabulary",
        "negative token",
        "fractional token",
        "token a string",
        "token a boolean",
        "huge token",
        "more tokens than a slot holds",
        "no tokens",
        "tokens not a list",
    ],
)
def test_invalid_index_entry_is_ignored_and_the_valid_one_kept(engine, state, cold_follow_up, how):
    shutil.copy(slot_file(state), state / "saved-7.bin")  # the bad entry's file is a valid state
    index = read_index(state)
    index["slots"].append(bad_entry(index["slots"][0], how, engine.info()["n_ctx_slot"]))
    write_index(state, index)
    assert engine.restore_slots(state) == {"known": 1, "ignored": 1}
    result = run(engine, FOLLOW_UP)
    assert result["stats"]["n_reused"] > 0
    assert result["tokens"] == cold_follow_up


def test_fingerprint_that_is_not_a_string_discards_the_index(engine, state):
    index = read_index(state)
    index["fingerprint"] = 42
    write_index(state, index)
    restored = engine.restore_slots(state)
    assert restored["known"] == 0
    assert "another model" in restored["discarded"]


def test_index_with_too_many_entries_keeps_a_bounded_number(engine, state):
    index = read_index(state)
    good = index["slots"][0]
    for n in range(20):
        shutil.copy(slot_file(state), state / f"saved-{n}.bin")
        index["slots"].append({**good, "key": f"k{n}", "file": f"saved-{n}.bin"})
    write_index(state, index)
    n_slots = OPTIONS["n_slots"]
    assert engine.restore_slots(state) == {"known": 2 * n_slots, "ignored": 21 - 2 * n_slots}
    engine.save_slots(state)
    assert len(list(state.glob("*.bin"))) == 2 * n_slots


# ---- what save and discard delete ---------------------------------------------------------------


def test_save_and_discard_delete_only_state_files(engine, state):
    notes = state / "notes.txt"
    notes.write_text("mine")
    assert engine.restore_slots(state) == {"known": 1}
    engine.save_slots(state)
    assert notes.read_text() == "mine"
    (state / "index.json").write_text("{not json")
    assert engine.restore_slots(state)["discarded"] == "corrupt index"
    assert sorted(p.name for p in state.iterdir()) == ["notes.txt"]


def test_slot_saved_earlier_survives_a_live_slot_taking_its_file_name(tiny_model, tmp_path, cold_follow_up):
    state = tmp_path / "state"
    save_prompt(tiny_model, state, slot="a")  # slot-0.bin
    other = "class Other: pass " * 6
    second = open_tiny(tiny_model)
    try:
        assert second.restore_slots(state) == {"known": 1}
        assert run(second, other, slot="b")["stats"]["slot"] == 0  # about to be saved as slot-0.bin
        assert second.save_slots(state) == {"saved": 2}
    finally:
        second.close()
    third = open_tiny(tiny_model)
    try:
        assert third.restore_slots(state) == {"known": 2}
        a = run(third, FOLLOW_UP, slot="a")
        assert a["stats"]["n_reused"] > 0
        assert a["tokens"] == cold_follow_up
        assert run(third, other + "more", slot="b")["stats"]["n_reused"] > 0
    finally:
        third.close()


def test_slots_saved_and_never_loaded_do_not_pile_up(tiny_model, tmp_path):
    state = tmp_path / "state"
    for n in range(5):
        e = open_tiny(tiny_model, n_slots=1)
        try:
            e.restore_slots(state)
            run(e, f"session {n}: " + "def f(x): return x " * 4, slot=f"k{n}")
            e.save_slots(state)
        finally:
            e.close()
    entries = read_index(state)["slots"]
    assert [entry["key"] for entry in entries] == ["k4", "k3"]  # the newest, up to twice the slot count
    assert sorted(p.name for p in state.iterdir()) == sorted(["index.json", *(e["file"] for e in entries)])


# ---- failed writes ------------------------------------------------------------------------------


def snapshot(state: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in state.iterdir()}


@pytest.fixture
def small_filesystem(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs: a disk that really fills up. Needs root (mount), else the test is skipped."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mount_point = tmp_path / "small"
    mount_point.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount_point)], capture_output=True, text=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", str(mount_point)], check=True)


def fill(directory: Path) -> Path:
    filler = directory / "filler"
    with open(filler, "wb", buffering=0) as out:
        try:
            while True:
                out.write(b"\0" * 4096)
        except OSError:  # no space left
            pass
    return filler


def test_full_disk_leaves_no_temporary_file_and_keeps_the_last_save(
    tiny_model, small_filesystem, cold_follow_up
):
    state = small_filesystem / "state"
    e = open_tiny(tiny_model)
    try:
        run(e, PROMPT)
        e.save_slots(state)
        saved = snapshot(state)
        run(e, FOLLOW_UP)  # the slot changed: saving writes its state again
        filler = fill(small_filesystem)
        with pytest.raises(native.NativeError) as failed:
            e.save_slots(state)
        assert failed.value.kind == "io"
        assert snapshot(state) == saved
    finally:
        e.close()

    # With no live slot, saving writes only the index: its write fails when the file is closed.
    e = open_tiny(tiny_model)
    try:
        assert e.restore_slots(state) == {"known": 1}
        with pytest.raises(native.NativeError, match="No space left") as failed:
            e.save_slots(state)
        assert failed.value.kind == "io"
        assert snapshot(state) == saved
        filler.unlink()
        assert e.save_slots(state) == {"saved": 1}
        result = run(e, FOLLOW_UP)
        assert result["stats"]["n_reused"] > 0
        assert result["tokens"] == cold_follow_up
    finally:
        e.close()


SAVE_UNDER_A_FILE_SIZE_LIMIT = """
import json, resource, signal, sys
from lsp_server.engine import native
model, state, limit, prompt, options = sys.argv[1:]
e = native.NativeEngine(model, json.loads(options))
e.restore_slots(state)
if prompt:
    e.generate({"prompt": prompt, "max_tokens": 8, "slot": "s"})
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit then fails with EFBIG
resource.setrlimit(resource.RLIMIT_FSIZE, (int(limit), resource.RLIM_INFINITY))
try:
    print(json.dumps(e.save_slots(state)))
except native.NativeError as exc:
    print(json.dumps({"kind": exc.kind, "message": str(exc)}))
"""


@pytest.mark.parametrize("failing", ["slot file, half way", "slot file, at the end", "index"])
def test_write_cut_short_by_a_file_size_limit_leaves_no_temporary_file(tiny_model, state, tmp_path, failing):
    """Runs without root, unlike the full disk: RLIMIT_FSIZE makes a write fail part way."""
    if failing.startswith("slot file"):
        reference = tmp_path / "reference"
        save_prompt(tiny_model, reference, prompt=FOLLOW_UP)
        size = slot_file(reference).stat().st_size
        # At the end, the last bytes sit in stdio's buffer until llama.cpp closes the file, unchecked.
        limit, prompt = (size // 2 if failing.endswith("half way") else size - 10), FOLLOW_UP
    else:
        limit, prompt = 100, ""  # no live slot: only the index (longer than 100 bytes) is written
    saved = snapshot(state)
    args = [str(tiny_model), str(state), str(limit), prompt, json.dumps(OPTIONS)]
    command = [sys.executable, "-c", SAVE_UNDER_A_FILE_SIZE_LIMIT, *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout.strip().splitlines()[-1])
    assert outcome.get("kind") == "io", outcome
    assert snapshot(state) == saved
