import pytest

from settings import Settings, SettingsError, coerce

DEFAULTS = {
    "name": "svc",
    "server.host": "127.0.0.1",
    "server.port": 8000,
    "server.debug": False,
    "cache.ttl": 1.0,
    "cache.backends": ["memory"],
}

TEXT = """
name = billing
# comment
[server]
port = 0x1F90
debug = yes

[cache]
ttl = 2.5
backends = redis, memory
"""


def test_load_text_converts_to_default_types():
    s = Settings(DEFAULTS).load_text(TEXT)
    assert s["name"] == "billing"
    assert s["server.port"] == 8080
    assert s["server.debug"] is True
    assert s["cache.ttl"] == 2.5
    assert s["cache.backends"] == ["redis", "memory"]
    assert s["server.host"] == "127.0.0.1"
    assert s.sources["server.port"] == "<string>:5"


def test_boolean_values():
    assert coerce("True", False) is True
    assert coerce(" OFF ", True) is False
    assert coerce("Yes", False) is True


def test_unknown_key_strict_and_lenient():
    with pytest.raises(SettingsError, match="unknown setting 'server.color'"):
        Settings(DEFAULTS).load_text("[server]\ncolor = red\n")
    s = Settings(DEFAULTS).load_text("[server]\ncolor = red\n", strict=False)
    assert s.get("server.color") is None


def test_bad_value_reports_location():
    with pytest.raises(SettingsError, match=r"cfg.ini:2: server.port"):
        Settings(DEFAULTS).load_text("[server]\nport = eighty\n", source="cfg.ini")


def test_env_overrides_and_section():
    s = Settings(DEFAULTS).load_env({"APP_SERVER__DEBUG": "On", "APP_SERVER__PORT": "9000", "HOME": "/x"})
    assert s.section("server") == {"host": "127.0.0.1", "port": 9000, "debug": True}
    assert s.sources["server.debug"] == "env:APP_SERVER__DEBUG"
