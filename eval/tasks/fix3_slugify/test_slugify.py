from slugify import SlugRegistry, safe_filename, slugify, unique_slug


def test_slugify_ascii_titles():
    assert slugify("Hello, World!") == "hello-world"
    assert slugify("  Don't Panic -- 42  ") == "dont-panic-42"
    assert slugify("Snake Case Me", separator="_", lowercase=False) == "Snake_Case_Me"
    assert slugify("!!!") == ""


def test_slugify_folds_accents_to_ascii():
    assert slugify("Crème Brûlée: 3 Ways!") == "creme-brulee-3-ways"
    assert slugify("Ärger im Café") == "arger-im-cafe"


def test_slugify_max_length_cuts_at_a_separator():
    assert slugify("the quick brown fox jumps", max_length=15) == "the-quick-brown"
    assert slugify("the quick brown fox jumps", max_length=14) == "the-quick"
    assert slugify("supercalifragilistic word", max_length=10) == "supercalif"


def test_unique_slug_numbers_duplicates():
    assert unique_slug("report", []) == "report"
    assert unique_slug("report", ["report"]) == "report-2"
    assert unique_slug("report", ["report", "report-2", "report-3"]) == "report-4"
    assert unique_slug("abcdefgh", ["abcdefgh"], max_length=8) == "abcdef-2"


def test_registry_hands_out_unique_slugs():
    registry = SlugRegistry(max_length=20)
    assert registry.register("Release Notes") == "release-notes"
    assert registry.register("Release notes!") == "release-notes-2"
    assert registry.register("???") == "untitled"
    assert registry.title_for("release-notes-2") == "Release notes!"
    assert len(registry) == 3


def test_safe_filename():
    assert safe_filename('report: "Q3"/final?.pdf') == "report_ _Q3__final_.pdf"
    assert safe_filename("con.txt") == "con_.txt"
    assert safe_filename("notes. ") == "notes"
    assert safe_filename(".bashrc") == ".bashrc"
    assert safe_filename("a" * 300 + ".tar") == "a" * 251 + ".tar"
