"""URL slugs and safe file names from arbitrary titles."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

_NON_ALNUM = re.compile(r"[^A-Za-z0-9]+")
_UNSAFE_FILENAME = re.compile(r'[\x00-\x1f<>:"/\\|?*]')
_WINDOWS_RESERVED = {"CON", "PRN", "AUX", "NUL"} | {f"{p}{n}" for p in ("COM", "LPT") for n in range(1, 10)}


def slugify(text: str, separator: str = "-", max_length: int | None = None, lowercase: bool = True) -> str:
    """``"Crème Brûlée: 3 Ways!"`` -> ``"creme-brulee-3-ways"``.

    Accents are folded to plain ASCII, apostrophes vanish (``don't`` -> ``dont``),
    every other run of non-alphanumerics becomes one separator. A slug longer than
    ``max_length`` is cut at a separator when one is close enough, else mid-word.
    """
    text = unicodedata.normalize("NFKD", text)
    text = text.encode("ascii", "ignore").decode("ascii")
    if lowercase:
        text = text.lower()
    text = text.replace("'", "")
    slug = separator.join(word for word in _NON_ALNUM.split(text) if word)
    if max_length is not None and len(slug) > max_length:
        cut = slug.rfind(separator, 0, max_length + 1)
        slug = slug[:cut] if cut > max_length // 2 else slug[:max_length]
    return slug


def unique_slug(slug: str, taken: Iterable[str], max_length: int | None = None) -> str:
    """``slug`` itself if free, else ``slug-2``, ``slug-3``, ... (still within ``max_length``)."""
    used = set(taken)
    if slug not in used:
        return slug
    number = 2
    while True:
        suffix = f"-{number}"
        base = slug if max_length is None else slug[: max_length - len(suffix)].rstrip("-")
        candidate = base + suffix
        if candidate not in used:
            return candidate
        number += 1


class SlugRegistry:
    """Hands out slugs that are unique within one site or folder."""

    def __init__(self, max_length: int = 60) -> None:
        self.max_length = max_length
        self._by_slug: dict[str, str] = {}

    def register(self, title: str) -> str:
        base = slugify(title, max_length=self.max_length) or "untitled"
        slug = unique_slug(base, self._by_slug, self.max_length)
        self._by_slug[slug] = title
        return slug

    def title_for(self, slug: str) -> str | None:
        return self._by_slug.get(slug)

    def __len__(self) -> int:
        return len(self._by_slug)


def safe_filename(name: str, replacement: str = "_", max_length: int = 255) -> str:
    """A name that is valid as one path component on Windows, macOS and Linux."""
    name = unicodedata.normalize("NFC", name)
    name = _UNSAFE_FILENAME.sub(replacement, name).strip().rstrip(". ")
    stem, dot, extension = name.rpartition(".")
    if not dot or not stem:
        stem, extension = name, ""
    if stem.upper() in _WINDOWS_RESERVED:
        stem += replacement
    if not stem:
        stem = "file"
    suffix = f".{extension}" if extension else ""
    room = max_length - len(suffix.encode("utf-8"))
    while len(stem.encode("utf-8")) > room:
        stem = stem[:-1]
    return stem + suffix
