"""The bench's next-edit part (bench/next_edit.py) without a model: its scripted edits type into the
running interpreter's glob.py as an editor sends keystrokes, the history it keeps for llama-server's prompts
is the server's, and its tables render."""

from __future__ import annotations

from lsprotocol import types

from bench import next_edit
from harness import report
from lsp_server.assistant.next_edit import END, EditHistory, build_prompt

URI = "file:///glob.py"


def apply(text: str, key: next_edit.Keystroke) -> str:
    lines = text.split("\n")
    line = lines[key.line]
    lines[key.line] = line[: key.start] + key.text + line[key.end :]
    return "\n".join(lines)


def test_each_edit_is_typed_a_keystroke_at_a_time_into_the_line_it_names() -> None:
    text = next_edit.DOC_SOURCE.read_text(encoding="utf-8")
    steps = next_edit.script(text)
    assert len(steps) == len(next_edit.EDITS)
    for step in steps:
        assert len(step.keystrokes) == len(step.edit.new)
        first = step.keystrokes[0]
        assert first.end - first.start == len(step.edit.old)  # the selection, typed over
        assert all(key.start == key.end for key in step.keystrokes[1:])  # then one character at a time
        for key in step.keystrokes:
            assert apply(text, key) == key.after
            text = key.after
        assert step.edit.new in text.split("\n")[step.cursor.line][: step.cursor.character]
    assert next_edit.parses(text)
    chats = next_edit.script(text, next_edit.CHAT_EDITS)
    assert next_edit.parses(chats[-1].text)


def test_the_edits_lie_in_the_window_the_request_with_no_edits_warms() -> None:
    text = next_edit.DOC_SOURCE.read_text(encoding="utf-8")
    steps = next_edit.script(text)
    first = next_edit.window_of(text, steps[0].start)
    assert all(next_edit.window_of(text, step.cursor) == first for step in steps)


def test_the_prompts_for_llama_server_follow_the_edits_as_the_server_sees_them() -> None:
    text = next_edit.DOC_SOURCE.read_text(encoding="utf-8")
    history = EditHistory()
    history.opened(URI, next_edit.DOC_NAME, text)
    step = next_edit.script(text)[0]
    for key in step.keystrokes:
        history.changed(URI, next_edit.DOC_NAME, key.after)
    hunks = history.recent(URI)
    assert len(hunks) == 1 and "dirs_only" in hunks[0].after  # the keystrokes are one edit
    document = history.get(URI)
    assert document is not None
    prompt = build_prompt(document, hunks, step.cursor.line)
    assert "dirs_only" in prompt.region.text and END not in prompt.answer_start


def answer(ms: float, outcome: str = "no change", evaluated: int = 150) -> next_edit.Answer:
    return next_edit.Answer(ms, outcome, 1500, evaluated, 90, 96, 80, t_prompt_ms=ms / 2, t_answer_ms=ms / 2)


def test_the_tables_have_a_verdict_per_goal_and_render() -> None:
    rename = next_edit.Answer(5, "rename")  # answered without the model: no prompt
    ours = next_edit.Ours1(
        answers=[answer(800), rename, answer(900, "suggested"), answer(2500, evaluated=400)]
    )
    theirs = next_edit.Theirs(
        answers=[answer(1000), answer(50), answer(1100), answer(3000)], n_prompt=[1500] * 4
    )
    rows = next_edit.latency_rows(ours, theirs)
    by_figure = {row[0]: row for row in rows}
    assert by_figure["time to an answer p50, ms, all 4 requests"][3] == "pass"
    assert by_figure["time to an answer p90, ms, all 4 requests"][3] == "FAIL"
    # The model's requests alone, against llama-server on the same three prompts.
    assert by_figure["time p50, ms, the 3 the model answered"][2:5] == ("900", "-", "1,100")
    assert by_figure["prompt tokens evaluated p50 (the model's)"][2:4] == ("150", "pass")
    assert by_figure["outcomes"][2] == "no change 2, rename 1, suggested 1"
    side = next_edit.completion.Side("ours", times_ms=[300, 400, 500], evaluated=[4, 5, 6])
    resumed = [True, False, False]
    off = next_edit.Typing("off", side, resumed=resumed)
    on = next_edit.Typing("on", side, [answer(600, "superseded")], resumed)
    assert on.after_pause(True) == [300] and on.after_pause(False) == [400, 500]
    chats = next_edit.Chats()
    chats.ttft_ms = {"off": [2000, 2100], "on": [2050, 2500]}
    cost = next_edit.interference_rows(off, on, chats)
    assert [row[4] for row in cost[:3]] == ["1.00x (pass)", "1.00x (pass)", "1.00x (pass)"]
    assert cost[2][0] == "completion, each request on / off, median (3 not cached)"
    for header, table in ((next_edit.LATENCY_HEADER, rows), (next_edit.INTERFERENCE_HEADER, cost)):
        assert report.Table(header, table).markdown().count("\n") == len(table) + 1
    assert "n/a" in next_edit.latency_rows(ours, None, goals=False)[0]


def test_a_length_finish_is_told_from_a_cancel() -> None:
    last = {"outcome": "cancelled", "finishReason": "length", "nPrompt": 10}
    assert next_edit.Answer.from_last(5.0, last).outcome == "cut short"
    assert next_edit.Answer.from_last(5.0, {**last, "outcome": "length"}).outcome == "cut short"
    assert next_edit.Answer.from_last(5.0, {**last, "finishReason": "cancelled"}).outcome == "cancelled"
    assert next_edit.Answer.from_last(5.0, None).outcome == "?"
    assert types.Position(0, 0) == next_edit.typed("ab\n", next_edit.Edit("x", "ab", "a", "c")).start
