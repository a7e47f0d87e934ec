"""The writer of docs/performance.md and docs/quality.md (harness/report.py) and the sections that bench and
the evals give it: a run replaces only its own sections, in one format; a partial eval run writes nothing
for the kinds it did not cover. No model."""

from __future__ import annotations

import argparse
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

from harness import report

ROOT = Path(__file__).resolve().parent.parent
RUN = report.Run("2026-12-05", "abc1234", "Some CPU, 2 cores", "1", "qwen2.5-coder-0.5b", "medians of 5")
RUN_LINE = re.compile(
    r"^Run: \d{4}-\d{2}-\d{2} · commit [0-9a-f]{7,}( with uncommitted changes)? · .+ · threads: [^·]+ · "
    r"model: [^·]+( · .+)?$"
)


def section(key: str, figure: str = "1 ms") -> report.Section:
    return report.Section(
        key,
        f"The {key} measurement",
        RUN,
        [report.Table(("what", "median"), [("a thing", figure)])],
        about="What is measured.",
    )


def load(name: str, path: Path) -> ModuleType:
    """An eval script as a module (they are run as scripts, not imported as a package)."""
    sys.path.insert(0, str(path.parent))
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(path.parent))


def test_a_run_replaces_its_own_section_and_leaves_the_rest_byte_for_byte() -> None:
    made_by = "`make bench`"
    intro = "# Performance\n\nWritten by hand: stays.\n\n"
    first = section("bench/one").markdown(made_by)
    between = "\n\nA paragraph by hand between the sections.\n\n"
    second = section("bench/two").markdown(made_by)
    outro = "\n\n## Measured once\n\nBy hand too.\n"
    text = intro + first + between + second + outro

    replaced = report.replace_section(text, section("bench/two", "2 ms"), made_by)

    assert replaced == intro + first + between + section("bench/two", "2 ms").markdown(made_by) + outro
    assert "| a thing | 2 ms |" in replaced and replaced.count("| a thing | 1 ms |") == 1


def test_a_section_the_doc_lacks_goes_after_its_last_section_or_at_the_end() -> None:
    text = "# Quality\n\nBy hand.\n"
    added = report.replace_section(text, section("eval/fix/auto"), "`make eval`")
    assert added.startswith(text.rstrip("\n") + "\n\n<!-- begin eval/fix/auto: ")
    assert added.endswith("<!-- end eval/fix/auto -->\n")
    tail = "\n\n## Measured once\n\nBy hand, below the sections.\n"
    again = report.replace_section(added.rstrip("\n") + tail, section("eval-chat"), "`make eval-chat`")
    assert report.keys(again) == ["eval/fix/auto", "eval-chat"]
    assert again.endswith("<!-- end eval-chat -->" + tail)


def test_a_key_that_is_a_prefix_of_another_does_not_touch_it() -> None:
    made_by = "`make eval`"
    text = section("eval-codebase/baselines-py").markdown(made_by) + "\n\n"
    text += section("eval-codebase").markdown(made_by) + "\n"
    replaced = report.replace_section(text, section("eval-codebase", "9 ms"), made_by)
    assert replaced.startswith(section("eval-codebase/baselines-py").markdown(made_by))
    assert report.keys(replaced) == ["eval-codebase/baselines-py", "eval-codebase"]
    assert replaced.count("9 ms") == 1


def test_two_sections_of_one_key_are_refused() -> None:
    block = section("bench/one").markdown("`make bench`")
    with pytest.raises(ValueError, match="2 sections"):
        report.replace_section(block + "\n\n" + block + "\n", section("bench/one"), "`make bench`")


def test_the_format_is_a_heading_a_run_line_tables_and_a_sentence() -> None:
    text = report.Section(
        "bench/check",
        "What a check adds",
        RUN,
        [report.Table(("a", "b|c"), [("x|y", "1")]), report.Table(("d",), [("2",)])],
        about="One sentence.",
        lines=["Right: a, b."],
    ).markdown("`make bench`")
    assert text.splitlines() == [
        "<!-- begin bench/check: written by `make bench` (harness/report.py) -->",
        "## What a check adds",
        "",
        "Run: 2026-12-05 · commit abc1234 · Some CPU, 2 cores · threads: 1 · model: qwen2.5-coder-0.5b · "
        "medians of 5",
        "",
        "| a | b\\|c |",
        "|---|---|",
        "| x\\|y | 1 |",
        "",
        "| d |",
        "|---|",
        "| 2 |",
        "",
        "Right: a, b.",
        "",
        "One sentence.",
        "",
        "<!-- end bench/check -->",
    ]


def test_a_row_that_does_not_fit_its_header_is_refused() -> None:
    with pytest.raises(ValueError, match="a row of 1 cells under a header of 2"):
        report.Table(("a", "b"), [("1",)]).markdown()


def test_a_run_now_names_this_checkout_and_machine() -> None:
    run = report.Run.now(threads=0, model="/models/My-Model.gguf", figures="one run")
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", run.date)
    assert re.fullmatch(r"[0-9a-f]{7,}( with uncommitted changes)?|unknown", run.commit), run.commit
    assert run.machine.endswith(" cores") and run.threads == "the server's default"
    assert run.model == "My-Model" and report.key_part("/models/My-Model.gguf") == "my-model"


def test_write_rewrites_only_the_sections_given(tmp_path: Path) -> None:
    doc = tmp_path / "performance.md"
    doc.write_text("# Performance\n\n" + section("bench/one").markdown("`make bench`") + "\n")
    report.write(doc, [section("bench/one", "5 ms"), section("bench/two")], "`make bench`")
    text = doc.read_text()
    assert report.keys(text) == ["bench/one", "bench/two"]
    assert "5 ms" in text and text.startswith("# Performance\n\n<!-- begin bench/one")


@pytest.mark.parametrize("doc", [report.PERFORMANCE, report.QUALITY], ids=lambda p: p.name)
def test_every_section_of_the_docs_is_in_the_writers_format(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    keys = report.keys(text)
    assert keys and len(keys) == len(set(keys)), keys
    for key in keys:
        body = re.search(
            rf"^<!-- begin {re.escape(key)}: written by `(?:make [a-z-]+|python [\w/.]+)` "
            rf"\(harness/report\.py\) -->\n(.*?)\n"
            rf"<!-- end {re.escape(key)} -->$",
            text,
            flags=re.MULTILINE | re.DOTALL,
        )
        assert body, f"{doc.name}: {key} has no end marker"
        lines = body[1].splitlines()
        assert lines[0].startswith("## ") and lines[1] == "", key
        assert RUN_LINE.match(lines[2]), f"{key}: {lines[2]!r}"
        tables = [i for i, line in enumerate(lines) if re.fullmatch(r"\|(---\|)+", line)]
        assert tables, f"{key}: no table"
        for i in tables:
            width = lines[i].count("---")
            row = i + 1
            while row < len(lines) and lines[row].startswith("| "):
                assert len(re.split(r"(?<!\\)\|", lines[row])) - 2 == width, f"{key}: {lines[row]!r}"
                row += 1


# ---- what the evals write --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def eval_run() -> ModuleType:
    return load("eval_run_for_report_tests", ROOT / "eval" / "run.py")


def outcome(eval_run: ModuleType, task: str, kind: str, passed: bool) -> object:
    return eval_run.Outcome(
        task, kind, edit=True, applies=True, parses=True, passed=passed, seconds=60.0, action_seconds=30.0
    )


def test_an_eval_writes_only_the_kinds_whose_every_task_ran(eval_run: ModuleType) -> None:
    every = [
        eval_run.Task(name, Path(name), kind, "m.py", 1, 2)
        for name, kind in (("fix_a", "fix"), ("fix2_b", "fix"), ("doc_c", "document"))
    ]
    outcomes = [outcome(eval_run, "fix_a", "fix", True), outcome(eval_run, "doc_c", "document", True)]
    assert eval_run.complete_kinds(outcomes, every) == {"document"}
    outcomes.append(outcome(eval_run, "fix2_b", "fix", False))
    assert eval_run.complete_kinds(outcomes, every) == {"fix", "document"}


def test_an_eval_section_is_keyed_by_kind_check_and_model(eval_run: ModuleType) -> None:
    args = argparse.Namespace(
        verify="auto",
        model=eval_run.models.DEFAULT_MODEL,
        threads=1,
        jobs=2,
        warm_first=True,
        write_tests_from_fixes=False,
    )
    fixes = [outcome(eval_run, "fix_a", "fix", True), outcome(eval_run, "fix2_b", "fix", False)]
    (fix,) = eval_run.doc_sections(fixes, args)
    assert fix.key == "eval/fix/auto"
    text = fix.markdown("`make eval`")
    assert "| 2 | 2 | 2 | 2 | 1 (50%) | 0 | 60 | 30 |" in text
    assert "Right: fix_a." in text and "--warm-first" in text
    args.verify, args.model = None, "qwen2.5-coder-0.5b"
    (unchecked,) = eval_run.doc_sections(fixes, args)
    assert unchecked.key == "eval/fix/unchecked/qwen2.5-coder-0.5b"


def test_the_chat_eval_section_has_a_row_per_repository_and_one_for_all() -> None:
    chat = load("eval_chat_run_for_report_tests", ROOT / "eval" / "chat" / "run.py")
    outcomes = [
        chat.Outcome("tox-1", "tox-dev/tox", "q", [], right=True, seconds=10.0),
        chat.Outcome("black-1", "psf/black", "q", [], empty=True, seconds=30.0),
    ]
    args = argparse.Namespace(model=chat.models.DEFAULT_MODEL, threads=2)
    section = chat.doc_section(outcomes, args)
    assert section.key == "eval-chat"
    rows = [row[0] for row in section.tables[0].rows]
    assert rows == ["tox-dev/tox", "psf/black", "all"]
    assert section.tables[0].rows[-1][:4] == ("all", "2", "1 (50%)", "1")


def test_the_codebase_eval_section_names_its_baselines() -> None:
    codebase = load("eval_codebase_run_for_report_tests", ROOT / "eval" / "codebase" / "run.py")
    scores = {"hit1": 0.5, "hit5": 1.0, "mrr": 0.75}
    summary = {"all": {"n": 2, "index": scores, "grep": scores, "bm25": scores}, "index_chunks": scores}
    build = codebase.Build("psf/black", "abc", 2, n_files=10, n_chunks=50, t_build_s=0.4)
    results = [codebase.Result("black-1", "psf/black", False, "q", [], t_query_ms={"index": 0.3})]
    section = codebase.doc_section(summary, ("index", "grep", "bm25"), [build], results, True)
    assert section.key == "eval-codebase/baselines-py"
    assert section.tables[0].rows == [["all", "2", *(["0.50", "1.00", "0.75"] * 3)]]
    assert section.tables[1].rows[0][:6] == ["psf/black", "1", "10", "50", "0.4", "0.4"]
    assert "--baselines-py" in section.about
    held_out = codebase.doc_section(summary, ("index", "grep", "bm25"), [build], results, False, True)
    assert held_out.key == "eval-codebase/held-out" and "held out" in held_out.title


# ---- what the bench writes -------------------------------------------------------------------------


def test_the_versus_rows_are_medians_and_the_ratio_of_ours_to_theirs() -> None:
    from bench import versus

    def turn(ms: float, evaluated: int) -> versus.Turn:
        return versus.Turn(ttft_ms=ms, n_evaluated=evaluated, n_prompt=2000, content="")

    scenario = versus.Scenario(
        "A",
        "(A) follow-up after 5 s",
        theirs=[turn(500, 20), turn(400, 20)],
        ours=[turn(300, 3), turn(100, 5)],
    )
    assert versus.scenario_row(scenario) == (
        "(A) follow-up after 5 s",
        "2",
        "450 ms",
        "20",
        "200 ms",
        "4",
        "0.44x",
    )
    plain = versus.plain_row(scenario, [turn(250, 21)])
    assert plain[0] == "(A) follow-up after 5 s, llama-server with -fa off" and plain[-1] == "0.80x"
    assert len(plain) == len(versus.SCENARIO_HEADER)
