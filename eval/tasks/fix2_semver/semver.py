"""Parse, compare and match semantic versions (https://semver.org subset)."""

import re
from functools import total_ordering

_VERSION_RE = re.compile(
    r"^v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?"
    r"(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$"
)


@total_ordering
class Version:
    """An immutable semantic version. Build metadata is ignored when comparing."""

    def __init__(self, major, minor, patch, prerelease=(), build=()):
        self.major = int(major)
        self.minor = int(minor)
        self.patch = int(patch)
        self.prerelease = tuple(prerelease)
        self.build = tuple(build)

    @classmethod
    def parse(cls, text):
        match = _VERSION_RE.match(text.strip())
        if not match:
            raise ValueError(f"not a semantic version: {text!r}")
        major, minor, patch, pre, build = match.groups()
        return cls(
            major,
            minor,
            patch,
            pre.split(".") if pre else (),
            build.split(".") if build else (),
        )

    def __str__(self):
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.prerelease:
            text += "-" + ".".join(self.prerelease)
        if self.build:
            text += "+" + ".".join(self.build)
        return text

    def __repr__(self):
        return f"Version({str(self)!r})"

    def _core(self):
        return (self.major, self.minor, self.patch)

    def __eq__(self, other):
        if not isinstance(other, Version):
            return NotImplemented
        return self._core() == other._core() and self.prerelease == other.prerelease

    def __hash__(self):
        return hash((self._core(), self.prerelease))

    def _compare_prerelease(self, other):
        if self.prerelease == other.prerelease:
            return 0
        if not self.prerelease:
            return -1
        if not other.prerelease:
            return 1
        for mine, theirs in zip(self.prerelease, other.prerelease):
            if mine == theirs:
                continue
            mine_num, theirs_num = mine.isdigit(), theirs.isdigit()
            if mine_num and theirs_num:
                return -1 if int(mine) < int(theirs) else 1
            if mine_num != theirs_num:
                return -1 if mine_num else 1
            return -1 if mine < theirs else 1
        return -1 if len(self.prerelease) < len(other.prerelease) else 1

    def __lt__(self, other):
        if not isinstance(other, Version):
            return NotImplemented
        if self._core() != other._core():
            return self._core() < other._core()
        return self._compare_prerelease(other) < 0

    def bump(self, part):
        """Return the next version for ``part`` ("major", "minor" or "patch")."""
        if part == "major":
            return Version(self.major + 1, 0, 0)
        if part == "minor":
            return Version(self.major, self.minor + 1, 0)
        if part == "patch":
            if self.prerelease:
                return Version(self.major, self.minor, self.patch)
            return Version(self.major, self.minor, self.patch + 1)
        raise ValueError(f"unknown version part: {part!r}")


def _matches(version, op, target):
    if op == "^":
        upper = target.bump("major") if target.major else target.bump("minor")
        return target <= version < upper
    if op == "~":
        return target <= version < target.bump("minor")
    checks = {
        ">=": version >= target,
        "<=": version <= target,
        ">": version > target,
        "<": version < target,
        "==": version == target,
        "=": version == target,
    }
    return checks[op]


def satisfies(version, constraint):
    """True if ``version`` meets every comma-separated clause of ``constraint``.

    >>> satisfies("1.4.2", ">=1.2.0, <2.0.0")
    True
    """
    if isinstance(version, str):
        version = Version.parse(version)
    for clause in constraint.split(","):
        clause = clause.strip()
        match = re.match(r"^(>=|<=|==|=|>|<|\^|~)?\s*(.+)$", clause)
        if not match:
            raise ValueError(f"bad constraint clause: {clause!r}")
        op, target = match.group(1) or "==", Version.parse(match.group(2))
        if not _matches(version, op, target):
            return False
    return True


def max_satisfying(versions, constraint):
    """The highest version string in ``versions`` that satisfies ``constraint``, or None."""
    candidates = [Version.parse(v) for v in versions if satisfies(v, constraint)]
    return str(max(candidates)) if candidates else None
