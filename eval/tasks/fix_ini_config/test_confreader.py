import pytest

from confreader import Config, ConfigError

SAMPLE = """
# deployment settings
[DEFAULT]
Timeout = 30
verbose = no

[server]
Host = example.org
port: 8080
debug = Yes
url = http://example.org/?a=1
allowed =
    alpha
    beta, gamma

[worker]
verbose = TRUE
threads = 4
use_cache = Off
"""


@pytest.fixture
def cfg():
    return Config.from_string(SAMPLE)


def test_basic_values_and_case_insensitive_keys(cfg):
    assert cfg.get("server", "host") == "example.org"
    assert cfg.get("server", "HOST") == "example.org"
    assert cfg.getint("server", "port") == 8080
    assert cfg.get("server", "url") == "http://example.org/?a=1"


def test_defaults_and_fallbacks(cfg):
    assert cfg.getint("worker", "timeout") == 30
    assert cfg.get("worker", "missing", fallback="x") == "x"
    with pytest.raises(ConfigError):
        cfg.get("nope", "host")


def test_booleans_are_case_insensitive(cfg):
    assert cfg.getboolean("server", "debug") is True
    assert cfg.getboolean("worker", "verbose") is True
    assert cfg.getboolean("worker", "use_cache") is False
    assert cfg.getboolean("server", "verbose") is False
    other = Config.from_string("[a]\nx = ON\ny = nO\n")
    assert [other.getboolean("a", "x"), other.getboolean("a", "y")] == [True, False]


def test_first_separator_splits_key_and_value():
    cfg = Config.from_string("[a]\nstart = 09:30\nhome: /srv/app?mode=rw\n")
    assert cfg.items("a") == [("home", "/srv/app?mode=rw"), ("start", "09:30")]


def test_invalid_boolean_rejected():
    cfg = Config.from_string("[a]\nflag = maybe\n")
    with pytest.raises(ConfigError):
        cfg.getboolean("a", "flag")


def test_continuation_lines_and_lists(cfg):
    assert cfg.getlist("server", "allowed") == ["alpha", "beta", "gamma"]


def test_key_outside_section_reports_line():
    with pytest.raises(ConfigError) as info:
        Config.from_string("\n\nname = x\n")
    assert info.value.lineno == 3
