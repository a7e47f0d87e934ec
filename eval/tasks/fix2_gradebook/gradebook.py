"""Course grade book: weighted categories, dropped scores and letter grades."""

from __future__ import annotations

from dataclasses import dataclass, field

LETTER_CUTOFFS = [(93, "A"), (90, "A-"), (87, "B+"), (83, "B"), (80, "B-"),
                  (77, "C+"), (73, "C"), (70, "C-"), (60, "D"), (0, "F")]


@dataclass(frozen=True)
class Score:
    name: str
    points: float
    max_points: float

    @property
    def fraction(self) -> float:
        return self.points / self.max_points


@dataclass
class Category:
    """A graded category such as "homework", worth ``weight`` of the course."""

    name: str
    weight: float
    drop_lowest: int = 0
    scores: list[Score] = field(default_factory=list)

    def add(self, name: str, points: float, max_points: float) -> None:
        if max_points <= 0:
            raise ValueError("max_points must be positive")
        if not 0 <= points <= max_points * 1.5:
            raise ValueError(f"{name}: implausible score {points}/{max_points}")
        self.scores.append(Score(name, points, max_points))

    def kept_scores(self) -> list[Score]:
        """Scores that count, after dropping the weakest ones by percentage."""
        kept = list(self.scores)
        for _ in range(min(self.drop_lowest, len(kept) - 1)):
            weakest = min(kept, key=lambda s: s.points)
            kept.remove(weakest)
        return kept

    def percentage(self) -> float | None:
        """Points earned over points possible among kept scores, as 0-100."""
        kept = self.kept_scores()
        if not kept:
            return None
        earned = sum(s.points for s in kept)
        possible = sum(s.max_points for s in kept)
        return 100.0 * earned / possible


class GradeBook:
    def __init__(self, categories: list[Category]):
        total = sum(c.weight for c in categories)
        if abs(total - 1.0) > 1e-9:
            raise ValueError(f"category weights sum to {total}, not 1")
        self.categories = {c.name: c for c in categories}

    def record(self, category: str, name: str, points: float, max_points: float) -> None:
        self.categories[category].add(name, points, max_points)

    def final_percentage(self) -> float:
        """Weighted average; empty categories are left out and the rest re-weighted."""
        weighted = 0.0
        used_weight = 0.0
        for category in self.categories.values():
            pct = category.percentage()
            if pct is None:
                continue
            weighted += pct * category.weight
            used_weight += category.weight
        return round(weighted / used_weight, 2) if used_weight else 0.0

    def letter(self) -> str:
        pct = self.final_percentage()
        for cutoff, letter in LETTER_CUTOFFS:
            if pct >= cutoff:
                return letter
        return "F"
