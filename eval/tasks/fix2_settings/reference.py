"""Load ``key = value`` settings files on top of typed defaults.

Example file::

    # service settings
    [server]
    host = 0.0.0.0
    port = 8080
    debug = yes

    [cache]
    ttl = 2.5
    backends = redis, memory

Keys are addressed as ``section.key``; keys before the first section header
belong to the ``""`` section and are addressed by their bare name.  Values are
converted to the type of the matching default.
"""

import os

TRUE_WORDS = {"1", "true", "yes", "on"}
FALSE_WORDS = {"0", "false", "no", "off"}


class SettingsError(ValueError):
    pass


def parse_lines(lines):
    """Yield ``(dotted_key, raw_value, line_number)`` for each setting in ``lines``."""
    section = ""
    for number, line in enumerate(lines, start=1):
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
            continue
        if "=" not in line:
            raise SettingsError(f"line {number}: expected 'key = value'")
        key, value = line.split("=", 1)
        key = key.strip()
        dotted = f"{section}.{key}" if section else key
        yield dotted, value.strip(), number


def coerce(raw, default):
    """Convert the string ``raw`` to the type of ``default``."""
    if isinstance(default, bool):
        word = raw.strip().lower()
        if word in TRUE_WORDS:
            return True
        if word in FALSE_WORDS:
            return False
        raise SettingsError(f"not a boolean: {raw!r}")
    if isinstance(default, int):
        return int(raw, 0)
    if isinstance(default, float):
        return float(raw)
    if isinstance(default, (list, tuple)):
        items = [item.strip() for item in raw.split(",") if item.strip()]
        return type(default)(items)
    return raw


class Settings:
    def __init__(self, defaults):
        self._defaults = dict(defaults)
        self._values = dict(defaults)
        self.sources = {key: "default" for key in defaults}

    def load_text(self, text, source="<string>", strict=True):
        for key, raw, number in parse_lines(text.splitlines()):
            if key not in self._defaults:
                if strict:
                    raise SettingsError(f"{source}:{number}: unknown setting {key!r}")
                continue
            try:
                self._values[key] = coerce(raw, self._defaults[key])
            except ValueError as exc:
                raise SettingsError(f"{source}:{number}: {key}: {exc}") from None
            self.sources[key] = f"{source}:{number}"
        return self

    def load_file(self, path, strict=True):
        with open(path, encoding="utf-8") as handle:
            return self.load_text(handle.read(), source=os.fspath(path), strict=strict)

    def load_env(self, environ=None, prefix="APP_"):
        """Override settings from variables like ``APP_SERVER__PORT=9000``."""
        environ = os.environ if environ is None else environ
        for name, raw in environ.items():
            if not name.startswith(prefix):
                continue
            key = name[len(prefix):].lower().replace("__", ".")
            if key in self._defaults:
                self._values[key] = coerce(raw, self._defaults[key])
                self.sources[key] = f"env:{name}"
        return self

    def __getitem__(self, key):
        return self._values[key]

    def get(self, key, fallback=None):
        return self._values.get(key, fallback)

    def section(self, name):
        """All settings of one section, keyed by their short name."""
        prefix = name + "."
        return {k[len(prefix):]: v for k, v in self._values.items() if k.startswith(prefix)}
