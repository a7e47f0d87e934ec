import pytest

from word_stats import longest_sentence, reading_time, split_sentences, text_stats, top_words, word_frequencies, words

TEXT = """The cat sat on the mat. The dog didn't sit!
Did the cat see the dog? The dog saw the cat, and the cat ran."""


def test_words_are_lower_cased_with_apostrophes():
    assert words("Don't STOP -- it's 9 o'clock.") == ["don't", "stop", "it's", "9", "o'clock"]
    assert words("") == []


def test_frequencies_skip_stopwords():
    counts = word_frequencies(TEXT, stopwords={"the"})
    assert counts["cat"] == 4 and counts["dog"] == 3
    assert "the" not in counts


def test_top_words_break_ties_alphabetically():
    assert top_words(TEXT, 2) == [("cat", 4), ("dog", 3)]
    assert top_words("pear apple pear fig apple kiwi", 3) == [("apple", 2), ("pear", 2), ("fig", 1)]
    assert top_words("", 3) == []


def test_split_sentences_keeps_abbreviations_together():
    text = 'Dr. Smith arrived, e.g. at noon.  "Is it late?" she asked (quietly.) Then left.'
    assert split_sentences(text) == [
        "Dr. Smith arrived, e.g. at noon.",
        '"Is it late?"',
        "she asked (quietly.)",
        "Then left.",
    ]


def test_split_sentences_keeps_text_after_the_last_stop():
    assert split_sentences("First one. Second one\nwithout a stop") == ["First one.", "Second one without a stop"]
    assert split_sentences("   ") == []


def test_reading_time_rounds_up():
    assert reading_time("word " * 200) == 1
    assert reading_time("word " * 201) == 2
    assert reading_time("") == 0
    with pytest.raises(ValueError):
        reading_time("word", words_per_minute=0)


def test_text_stats_summary():
    stats = text_stats(TEXT)
    assert (stats.words, stats.unique_words, stats.sentences) == (25, 13, 4)
    assert stats.average_sentence_length == 6.25
    assert stats.reading_minutes == 1
    assert longest_sentence(TEXT) == "The dog saw the cat, and the cat ran."
