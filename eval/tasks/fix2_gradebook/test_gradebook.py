import pytest

from gradebook import Category, GradeBook


def make_book():
    return GradeBook([
        Category("homework", 0.3, drop_lowest=1),
        Category("quizzes", 0.2, drop_lowest=2),
        Category("exams", 0.5),
    ])


def test_weights_must_sum_to_one():
    with pytest.raises(ValueError):
        GradeBook([Category("a", 0.5), Category("b", 0.4)])


def test_drop_lowest_scores():
    hw = Category("homework", 1.0, drop_lowest=1)
    hw.add("hw1", 8, 10)
    hw.add("hw2", 15, 20)
    hw.add("hw3", 9, 10)
    assert [s.name for s in hw.kept_scores()] == ["hw1", "hw3"]
    assert hw.percentage() == pytest.approx(85.0)

    quiz = Category("quizzes", 1.0, drop_lowest=2)
    for name, points, max_points in [("q1", 4, 5), ("q2", 30, 50), ("q3", 40, 50), ("q4", 5, 5)]:
        quiz.add(name, points, max_points)
    assert [s.name for s in quiz.kept_scores()] == ["q3", "q4"]


def test_never_drops_the_only_score():
    c = Category("labs", 1.0, drop_lowest=3)
    c.add("lab1", 3, 10)
    assert c.percentage() == pytest.approx(30.0)


def test_final_percentage_and_letter():
    book = make_book()
    book.record("homework", "hw1", 16, 20)
    book.record("homework", "hw2", 9, 10)
    book.record("quizzes", "q1", 9, 10)
    book.record("exams", "mid", 82, 100)
    assert book.final_percentage() == pytest.approx(86.0)
    assert book.letter() == "B"


def test_empty_categories_are_reweighted():
    book = make_book()
    book.record("exams", "mid", 91, 100)
    assert book.final_percentage() == 91.0
    assert book.letter() == "A-"


def test_rejects_implausible_scores():
    with pytest.raises(ValueError):
        make_book().record("exams", "final", 200, 100)
