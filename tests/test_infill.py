"""Inline completion's text rules (lsp_server.assistant.infill), without a model."""

from __future__ import annotations

from lsp_server.assistant import infill
from lsp_server.assistant.infill import Around, Ending, RecentCompletions, around_cursor

SOURCE = "import os\n\n\ndef add(a, b):\n    return \n\n\nprint(add(1, 2))\n"


def test_the_prompt_takes_the_lines_above_the_cursor_line_up_to_it_and_what_follows():
    around = around_cursor(SOURCE, 4, len("    return "))
    assert around is not None
    assert around.prefix == "import os\n\n\ndef add(a, b):\n"
    assert around.prompt == "    return "
    assert around.suffix == "\n\n\nprint(add(1, 2))\n"


def test_no_completion_with_more_than_a_few_characters_right_of_the_cursor():
    text = "x = compute(alpha, beta, gamma)\n"
    assert around_cursor(text, 0, len("x = ")) is None
    assert around_cursor(text, 0, len("x = compute(alpha, beta, gamma")) is not None  # ")" only


def test_the_window_above_the_cursor_moves_in_steps_so_that_keystrokes_share_its_start():
    text = "".join(f"line {n}\n" for n in range(1000))
    firsts = set()
    for line in range(600, 600 + infill.WINDOW_STEP):
        around = around_cursor(text, line, 0)
        assert around is not None
        first = around.prefix.split("\n")[0]
        assert line - int(first.split()[1]) <= infill.PREFIX_LINES
        firsts.add(first)
    assert len(firsts) <= 2
    assert around_cursor(text, 200, 0).prefix.startswith("line 0\n")  # type: ignore[union-attr]


def ending(prompt: str, right: str = "", budget_s: float = 10.0, now: list[float] | None = None) -> Ending:
    clock = now or [0.0]
    return Ending(Around("", prompt, right, ""), budget_s, clock=lambda: clock[0])


def test_a_completion_ends_with_its_block():
    end = ending("def add(a, b):")
    text = "\n    return a + b\n\n\ndef sub(a, b):\n"
    assert not end.keep_going(text)
    assert end.shown(text) == "\n    return a + b"
    # A line indented less than the cursor's line ends it too.
    inside = ending("    ")
    assert inside.shown("total = 0\n    for x in xs:\n        total += x\nprint(total)\n") == (
        "total = 0\n    for x in xs:\n        total += x"
    )


def test_a_completion_goes_on_while_its_block_does():
    end = ending("    ")
    assert end.keep_going("total = 0")
    assert end.keep_going("total = 0\n")
    assert end.keep_going("total = 0\n    for x in xs:\n")


def test_in_the_middle_of_a_line_a_completion_is_the_rest_of_it():
    end = ending("    return a")
    assert end.keep_going(" + b")
    assert not end.keep_going(" + b\n    print(a)")
    assert end.shown(" + b\n    print(a)") == " + b"
    # A line that opens a block goes on below.
    assert ending("    if ready:").shown("\n        go()\n") == "\n        go()"


def test_with_text_right_of_the_cursor_a_completion_is_one_line_and_does_not_repeat_it():
    end = ending("print(add(1, ", right="))\n")
    assert not end.keep_going("2))\nmore")
    assert end.shown("2))\nmore") == "2"


def test_over_the_time_budget_a_completion_ends_at_the_next_line_break():
    now = [0.0]
    end = ending("def f():", budget_s=1.0, now=now)
    assert end.keep_going("\n    x = 1")
    now[0] = 2.0
    assert end.keep_going("\n    x = 1")  # no line break since the first: the line is unfinished
    assert not end.keep_going("\n    x = 1\n    y")
    assert end.shown("\n    x = 1\n    y") == "\n    x = 1"


def test_at_most_max_lines_lines():
    end = ending("def f():")
    text = "".join(f"\n    x{n} = {n}" for n in range(20))
    assert end.shown(text).count("\n") == infill.MAX_LINES - 1


def test_recent_completions_are_found_again_and_typing_what_they_offered_keeps_them():
    recent = RecentCompletions(size=2)
    around = Around("def add(a, b):\n", "    return", "", "\n")
    recent.put(around.key("calc.py"), " a + b")
    assert recent.get(around, "calc.py") == " a + b"
    typed = Around(around.prefix, "    return a +", "", "\n")
    assert recent.get(typed, "calc.py") == " b"
    assert recent.get(Around(around.prefix, "    return a -", "", "\n"), "calc.py") is None
    assert recent.get(around, "other.py") is None
    # The least recently used goes first.
    recent.put(Around("", "x", "", "").key("calc.py"), "1")
    recent.put(Around("", "y", "", "").key("calc.py"), "2")
    assert recent.get(around, "calc.py") is None
