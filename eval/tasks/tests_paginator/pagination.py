"""Pagination helpers for list views and JSON APIs."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Generic, Sequence, TypeVar
from urllib.parse import urlencode

T = TypeVar("T")


@dataclass(frozen=True)
class Page(Generic[T]):
    items: Sequence[T]
    number: int
    per_page: int
    total_items: int

    @property
    def total_pages(self) -> int:
        return max(1, math.ceil(self.total_items / self.per_page))

    @property
    def has_previous(self) -> bool:
        return self.number > 1

    @property
    def has_next(self) -> bool:
        return self.number < self.total_pages

    @property
    def first_index(self) -> int:
        """1-based position of the first item on this page (0 when there are no items)."""
        return (self.number - 1) * self.per_page + 1 if self.items else 0

    @property
    def last_index(self) -> int:
        return self.first_index + len(self.items) - 1 if self.items else 0


def paginate(items: Sequence[T], page: int | str | None, per_page: int = 20) -> Page[T]:
    """Slice ``items`` for the requested page; bad or out-of-range numbers are clamped."""
    if per_page < 1:
        raise ValueError("per_page must be at least 1")
    try:
        number = int(page) if page is not None else 1
    except ValueError:
        number = 1
    total_pages = max(1, math.ceil(len(items) / per_page))
    number = min(max(number, 1), total_pages)
    start = (number - 1) * per_page
    return Page(items[start:start + per_page], number, per_page, len(items))


def page_links(current: int, total_pages: int, window: int = 2, edges: int = 1) -> list[int | None]:
    """Page numbers to show in a pager, with ``None`` where a gap ("...") goes.

    ``window`` pages are shown on each side of ``current`` and ``edges`` pages
    at each end.  A gap that would hide a single page shows that page instead.

    >>> page_links(10, 20)
    [1, None, 8, 9, 10, 11, 12, None, 20]
    """
    if total_pages < 1:
        return []
    if not 1 <= current <= total_pages:
        raise ValueError(f"page {current} is outside 1..{total_pages}")
    shown = set(range(1, min(edges, total_pages) + 1))
    shown |= set(range(max(1, total_pages - edges + 1), total_pages + 1))
    shown |= set(range(max(1, current - window), min(total_pages, current + window) + 1))
    links: list[int | None] = []
    previous = 0
    for number in sorted(shown):
        gap = number - previous - 1
        if gap == 1:
            links.append(previous + 1)
        elif gap > 1:
            links.append(None)
        links.append(number)
        previous = number
    return links


def page_url(base: str, number: int, **params: object) -> str:
    """Build a link to page ``number``, keeping other query parameters in order."""
    query = {k: v for k, v in params.items() if v is not None}
    if number != 1:
        query["page"] = number
    return f"{base}?{urlencode(query)}" if query else base


def link_header(base: str, page: Page, **params: object) -> str:
    """An RFC 8288 ``Link`` header with first/prev/next/last relations."""
    rels = [("first", 1)]
    if page.has_previous:
        rels.append(("prev", page.number - 1))
    if page.has_next:
        rels.append(("next", page.number + 1))
    rels.append(("last", page.total_pages))
    return ", ".join(f'<{page_url(base, n, **params)}>; rel="{rel}"' for rel, n in rels)
