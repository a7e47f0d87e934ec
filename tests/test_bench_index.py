"""The bench's index part (bench/index.py) on a tiny corpus: its worker measures every figure, the table
has one verdict per goal, and the section renders. No model, no chat (that needs the real server)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import index

N_FILES = 30


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return index.write_corpus(tmp_path_factory.mktemp("corpus"), index.stdlib_files(N_FILES), copies=2)


@pytest.fixture(scope="module")
def measured(
    corpus: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory
) -> tuple[index.Figures, index.Figures, list[str]]:
    sample, large = corpus
    workdir = tmp_path_factory.mktemp("bench-index")
    queries = index.docstring_queries(sample, 6)
    small = index.measure_in_worker(sample, queries, workdir / "small", n_updates=3)
    big = index.measure_in_worker(large, queries, workdir / "large", n_updates=3)
    return small, big, queries


def test_the_corpus_is_copied_from_the_standard_library_never_indexed_in_place(
    corpus: tuple[Path, Path],
) -> None:
    files = index.stdlib_files(N_FILES)
    assert len(set(files)) == N_FILES and all(path.suffix == ".py" for path in files)
    sample, large = corpus
    assert len(index.python_files(sample)) == N_FILES
    assert len(index.python_files(large)) == 2 * N_FILES
    assert not sample.is_relative_to(index.stdlib())


def test_queries_are_first_sentences_of_docstrings_drawn_the_same_each_run(corpus: tuple[Path, Path]) -> None:
    sample, _ = corpus
    queries = index.docstring_queries(sample, 6)
    assert len(queries) == 6 and all(4 <= len(query.split()) <= 25 for query in queries)
    assert all("\n" not in query for query in queries)
    assert index.docstring_queries(sample, 6) == queries


def test_the_worker_measures_every_figure_positive(
    measured: tuple[index.Figures, index.Figures, list[str]],
) -> None:
    small, big, queries = measured
    assert (small.n_files, big.n_files) == (N_FILES, 2 * N_FILES)
    for figures in (small, big):
        assert figures.n_chunks > figures.n_files
        assert figures.cold_s > 0 and figures.save_s > 0 and figures.reload_s > 0
        assert figures.saved_bytes > 0
        assert figures.first_query_ms > 0 and figures.query_after_update_ms > 0
        assert len(figures.query_ms) == len(queries) - 1 and min(figures.query_ms) > 0
        assert len(figures.update_ms) == 3 and min(figures.update_ms) > 0
        assert figures.reread_on_reload == 0  # the files the updates edited were put back as they were
        assert 0 < figures.rss_before_kb <= figures.hwm_kb and figures.rss_after_kb > 0


def test_the_table_has_a_verdict_for_each_goal_and_renders(
    measured: tuple[index.Figures, index.Figures, list[str]],
) -> None:
    small, big, _ = measured
    chat = index.ChatFigures(
        on=[
            index.ChatTurn(True, 1200.0, 900.0, 1, 40, False),
            index.ChatTurn(True, 1000.0, 800.0, 1, 50, False),
        ],
        off=[index.ChatTurn(False, 1000.0, 800.0, 1), index.ChatTurn(False, 1100.0, 850.0, 1)],
    )
    for table in (index.rows(small, big, None), index.rows(small, big, chat)):
        assert all(len(row) == len(index.HEADER) for row in table)
        assert {row[3] for row in table} <= {"pass", "FAIL", "-"}
        judged = [row for row in table if row[3] != "-"]
        # cold build, reload, two updates, two query p50s, RSS growth; the chat's delay when measured
        assert len(judged) == (8 if table[-1][2] != "not measured" else 7)
    assert chat.delay_ms == pytest.approx(50.0) and chat.ratio == pytest.approx(1100 / 1050)
    section = index.section(small, big, chat, None, copies=2)
    markdown = section.markdown("`make bench`")
    assert section.key == "bench/index" and "| figure | goal | measured | result |" in markdown
    assert "threads: 1" in markdown
