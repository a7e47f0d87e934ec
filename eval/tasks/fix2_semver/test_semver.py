import pytest

from semver import Version, max_satisfying, satisfies


def test_parse_and_str_round_trip():
    v = Version.parse("v1.10.3-rc.2+build.7")
    assert (v.major, v.minor, v.patch) == (1, 10, 3)
    assert v.prerelease == ("rc", "2")
    assert str(v) == "1.10.3-rc.2+build.7"


def test_parse_rejects_garbage():
    with pytest.raises(ValueError):
        Version.parse("1.2")


def test_release_ranks_above_its_prereleases():
    assert Version.parse("1.0.0-alpha") < Version.parse("1.0.0")
    assert Version.parse("2.3.1") > Version.parse("2.3.1-rc.1")


def test_prerelease_ordering_from_spec():
    ordered = ["1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta",
               "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0"]
    shuffled = list(reversed(ordered))
    assert [str(v) for v in sorted(Version.parse(s) for s in shuffled)] == ordered


def test_caret_and_tilde_constraints():
    assert satisfies("1.4.2", "^1.2.0")
    assert not satisfies("2.0.0", "^1.2.0")
    assert satisfies("1.2.9", "~1.2.0")
    assert not satisfies("1.3.0", "~1.2.0")


def test_max_satisfying_prefers_final_release():
    versions = ["1.2.0", "1.3.0-rc.1", "1.3.0", "2.0.0"]
    assert max_satisfying(versions, ">=1.0.0, <2.0.0") == "1.3.0"
    assert max_satisfying(["0.9.0"], ">=1.0.0") is None
