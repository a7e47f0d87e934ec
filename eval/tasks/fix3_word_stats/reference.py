"""Text statistics: words, frequencies, the most common words, sentences and reading time."""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Collection

WORD = re.compile(r"[a-z0-9]+(?:['’][a-z]+)*")
ABBREVIATIONS = frozenset({"dr.", "mr.", "mrs.", "ms.", "e.g.", "i.e.", "etc.", "vs.", "st."})
CLOSING = "\"')]’”"
DEFAULT_STOPWORDS = frozenset({"a", "an", "and", "the", "of", "to", "in", "is", "it"})


@dataclass(frozen=True)
class TextStats:
    words: int
    unique_words: int
    sentences: int
    average_sentence_length: float
    reading_minutes: int


def words(text: str) -> list[str]:
    """Lower-cased words; apostrophes inside a word (``don't``) are kept."""
    return WORD.findall(text.lower())


def word_frequencies(text: str, stopwords: Collection[str] = ()) -> Counter[str]:
    return Counter(word for word in words(text) if word not in stopwords)


def top_words(text: str, n: int, stopwords: Collection[str] = DEFAULT_STOPWORDS) -> list[tuple[str, int]]:
    """The ``n`` most frequent words; words with equal counts come in alphabetical order."""
    counts = word_frequencies(text, stopwords)
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:n]


def _ends_sentence(token: str) -> bool:
    bare = token.rstrip(CLOSING)
    return bare[-1:] in (".", "!", "?") and bare.lower() not in ABBREVIATIONS


def split_sentences(text: str) -> list[str]:
    """Split text into sentences.

    A sentence ends with a word whose last character (before closing quotes or brackets) is ``.``,
    ``!`` or ``?``, unless that word is a known abbreviation such as ``Dr.`` or ``e.g.``.
    Whitespace inside a sentence is normalised.
    """
    sentences: list[str] = []
    current: list[str] = []
    for token in text.split():
        current.append(token)
        if _ends_sentence(token):
            sentences.append(" ".join(current))
            current = []
    if current:
        sentences.append(" ".join(current))
    return sentences


def reading_time(text: str, words_per_minute: int = 200) -> int:
    """Whole minutes needed to read the text, rounded up; 0 for text without words."""
    if words_per_minute <= 0:
        raise ValueError("words_per_minute must be positive")
    return math.ceil(len(words(text)) / words_per_minute)


def text_stats(text: str, words_per_minute: int = 200) -> TextStats:
    all_words = words(text)
    sentences = split_sentences(text)
    average = len(all_words) / len(sentences) if sentences else 0.0
    return TextStats(
        words=len(all_words),
        unique_words=len(set(all_words)),
        sentences=len(sentences),
        average_sentence_length=round(average, 2),
        reading_minutes=reading_time(text, words_per_minute),
    )


def longest_sentence(text: str) -> str:
    """The sentence with the most words; the first one among equals, "" for empty text."""
    return max(split_sentences(text), key=lambda sentence: len(words(sentence)), default="")
