"""Minimal INI-style configuration reader.

Supports:
  * [section] headers (names are case-sensitive, keys are not)
  * key = value and key: value pairs
  * full-line comments starting with '#' or ';'
  * indented continuation lines, joined with a newline
  * a [DEFAULT] section whose keys are visible in every section
"""

import re

_SECTION = re.compile(r"^\[(?P<name>[^\]]+)\]\s*$")
_BOOLEANS = {
    "1": True, "yes": True, "true": True, "on": True,
    "0": False, "no": False, "false": False, "off": False,
}


class ConfigError(Exception):
    def __init__(self, message, lineno=None):
        if lineno is not None:
            message = "line %d: %s" % (lineno, message)
        super().__init__(message)
        self.lineno = lineno


class Config:
    def __init__(self):
        self.defaults = {}
        self.sections = {}

    @classmethod
    def from_string(cls, text):
        cfg = cls()
        cfg.read_string(text)
        return cfg

    def read_string(self, text):
        current = None
        last_key = None
        for lineno, raw in enumerate(text.splitlines(), start=1):
            stripped = raw.strip()
            if not stripped or stripped[0] in "#;":
                continue
            # continuation of the previous value
            if raw[0] in " \t" and last_key is not None:
                current[last_key] += "\n" + stripped
                continue
            m = _SECTION.match(stripped)
            if m:
                name = m.group("name").strip()
                if name == "DEFAULT":
                    current = self.defaults
                else:
                    current = self.sections.setdefault(name, {})
                last_key = None
                continue
            if current is None:
                raise ConfigError("key outside of any section", lineno)
            positions = [i for i in (stripped.find("="), stripped.find(":")) if i > 0]
            if not positions:
                raise ConfigError("expected 'key = value'", lineno)
            cut = max(positions)
            key = stripped[:cut].strip().lower()
            current[key] = stripped[cut + 1:].strip()
            last_key = key

    def has_option(self, section, key):
        return key.lower() in self.sections.get(section, {}) or key.lower() in self.defaults

    def get(self, section, key, fallback=None):
        if section not in self.sections:
            if fallback is not None:
                return fallback
            raise ConfigError("no section %r" % section)
        key = key.lower()
        values = self.sections[section]
        if key in values:
            return values[key]
        if key in self.defaults:
            return self.defaults[key]
        if fallback is not None:
            return fallback
        raise ConfigError("no option %r in section %r" % (key, section))

    def getint(self, section, key, fallback=None):
        value = self.get(section, key, fallback)
        return value if isinstance(value, int) else int(value)

    def getfloat(self, section, key, fallback=None):
        value = self.get(section, key, fallback)
        return value if isinstance(value, float) else float(value)

    def getboolean(self, section, key, fallback=None):
        value = self.get(section, key, fallback)
        if isinstance(value, bool):
            return value
        word = value.strip().lower()
        if word not in _BOOLEANS:
            raise ConfigError("not a boolean: %r" % value)
        return _BOOLEANS[word]

    def getlist(self, section, key, sep=","):
        value = self.get(section, key)
        parts = value.replace("\n", sep).split(sep)
        return [p.strip() for p in parts if p.strip()]

    def items(self, section):
        merged = dict(self.defaults)
        merged.update(self.sections.get(section, {}))
        return sorted(merged.items())
