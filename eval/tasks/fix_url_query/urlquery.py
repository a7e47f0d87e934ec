# Helpers for reading and rewriting URL query strings.
#
# Query values are kept as lists because keys may repeat
# (?tag=a&tag=b). Ordering of keys is preserved.

from urllib.parse import quote, unquote_plus, urlsplit, urlunsplit


def parse_query(query, into={}):
    """Parse 'a=1&b=x+y&a=2' into {'a': ['1', '2'], 'b': ['x y']}.

    Pass an existing dict as `into` to merge more parameters into it.
    """
    query = query.lstrip("?")
    for pair in query.split("&"):
        if not pair:
            continue
        key, _, value = pair.partition("=")
        into.setdefault(unquote_plus(key), []).append(unquote_plus(value))
    return into


def _encode_value(value):
    if value is True:
        return "true"
    if value is False:
        return "false"
    return quote(str(value), safe="")


def build_query(params, sort=False):
    """Inverse of parse_query. Lists/tuples repeat the key; None is skipped."""
    items = sorted(params.items()) if sort else params.items()
    parts = []
    for key, value in items:
        values = value if isinstance(value, (list, tuple)) else [value]
        for v in values:
            if v is None:
                continue
            parts.append(quote(str(key), safe="") + "=" + _encode_value(v))
    return "&".join(parts)


def set_params(url, **params):
    """Return `url` with the given parameters replaced (None removes one)."""
    scheme, netloc, path, query, fragment = urlsplit(url)
    current = parse_query(query)
    for key, value in params.items():
        if value is None:
            current.pop(key, None)
        else:
            current[key] = value
    return urlunsplit((scheme, netloc, path, build_query(current), fragment))


def remove_params(url, *names):
    scheme, netloc, path, query, fragment = urlsplit(url)
    current = parse_query(query)
    for name in names:
        current.pop(name, None)
    return urlunsplit((scheme, netloc, path, build_query(current), fragment))


def get_param(url, name, default=None):
    values = parse_query(urlsplit(url).query).get(name)
    return values[0] if values else default


def get_all(url, name):
    return parse_query(urlsplit(url).query).get(name, [])


def canonical(url):
    """Lower-case scheme and host, drop the fragment, sort the query."""
    scheme, netloc, path, query, _ = urlsplit(url)
    query = build_query(parse_query(query), sort=True)
    return urlunsplit((scheme.lower(), netloc.lower(), path or "/", query, ""))
