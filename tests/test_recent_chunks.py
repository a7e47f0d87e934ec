"""The ring buffer of other files' chunks for inline completion (assistant.recent_chunks), without a
model: what enters, what goes, what a completion gets and when its choice changes."""

from __future__ import annotations

from lsp_server.assistant.recent_chunks import CHARS_PER_TOKEN, REPICK_LINES, RecentChunks, cut

SHAPES = "".join(
    f"def area_of_{name}(size):\n    return size * {factor}\n\n\n"
    for name, factor in (("square", 1), ("circle", 3.14), ("triangle", 0.5))
)
PRICES = (
    "def price_with_tax(amount):\n    return amount * 1.2\n\n\ndef discount(amount):\n    return amount\n"
)


def test_a_file_is_cut_where_its_definitions_start():
    assert [(start, end) for start, end, _ in cut(SHAPES)] == [(1, 4), (5, 8), (9, 12)]
    long = "".join(f"x{n} = {n}\n" for n in range(100))  # no definitions: windows of 64 lines
    assert [(start, end) for start, end, _ in cut(long)] == [(1, 64), (65, 100)]


def test_a_completion_gets_the_similar_chunks_of_other_files_never_its_own():
    ring = RecentChunks()
    ring.opened("file:///shapes.py", "shapes.py", SHAPES)
    ring.opened("file:///prices.py", "prices.py", PRICES)
    ring.opened("file:///main.py", "main.py", "total = area_of_circle(2)\n")
    picked = ring.pick("file:///main.py", 1, "total = area_of_circle(2)\nprint(area_of_")
    assert picked and all(chunk.name == "shapes.py" for chunk in picked)
    assert "def area_of_circle" in "".join(chunk.text for chunk in picked)
    assert [chunk.place for chunk in picked] == sorted(
        (chunk.place for chunk in picked), key=lambda p: int(p.split(":")[1].split("-")[0])
    )  # in ring order: the file's order


def test_the_ring_and_the_prompt_text_are_bounded():
    ring = RecentChunks(size=5, token_budget=40)
    for n in range(4):
        ring.opened(f"file:///m{n}.py", f"m{n}.py", SHAPES.replace("area", f"area{n}"))
    assert len(ring) == 5
    picked = ring.pick("file:///other.py", 0, "area_of_square area_of_circle area_of_triangle size")
    assert sum(len(chunk.text) + len(chunk.name) + 2 for chunk in picked) <= 40 * CHARS_PER_TOKEN


def test_a_closed_files_chunks_go():
    ring = RecentChunks()
    ring.opened("file:///shapes.py", "shapes.py", SHAPES)
    assert ring.pick("file:///main.py", 0, "area_of_square(3)")
    ring.closed("file:///shapes.py")
    assert len(ring) == 0
    assert ring.pick("file:///main.py", 0, "area_of_square(3)") == []


def test_the_choice_stays_while_typing_nearby_and_changes_once_the_cursor_moves_away():
    ring = RecentChunks()
    ring.opened("file:///shapes.py", "shapes.py", SHAPES)
    ring.opened("file:///prices.py", "prices.py", PRICES)
    first = ring.pick("file:///main.py", 10, "area_of_square(3)")
    # Typed on: other words near the cursor, same choice (the prompt's start stays the same).
    assert ring.pick("file:///main.py", 11, "price_with_tax discount amount") == first
    moved = ring.pick("file:///main.py", 11 + REPICK_LINES, "price_with_tax discount amount")
    assert moved != first and all(chunk.name == "prices.py" for chunk in moved)


def test_edits_count_once_another_file_asks_and_bring_the_edited_chunk_in_newest():
    ring = RecentChunks(size=2)
    ring.opened("file:///shapes.py", "shapes.py", SHAPES)  # only its last two chunks fit
    assert [chunk.start_line for chunk in ring.chunks()] == [5, 9]
    edited = SHAPES.replace("return size * 1", "return size * size")
    ring.edited("file:///shapes.py", "shapes.py", edited, [1])
    assert "size * size" not in "".join(chunk.text for chunk in ring.chunks())  # not cut while typing
    ring.pick("file:///main.py", 0, "area_of_square")
    assert ring.chunks()[-1].start_line == 1 and "size * size" in ring.chunks()[-1].text
