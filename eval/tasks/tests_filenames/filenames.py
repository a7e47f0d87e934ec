"""Make user-supplied names safe to use as file names and URL slugs.

Used by the upload handler: browsers send whatever the user's file was
called, and the result has to be valid on Linux, macOS and Windows shares.
"""

import re
import unicodedata

WINDOWS_RESERVED = {"CON", "PRN", "AUX", "NUL"} | {f"COM{i}" for i in range(1, 10)} | {
    f"LPT{i}" for i in range(1, 10)
}
FORBIDDEN = re.compile(r'[<>:"/\\|?*\x00-\x1f]')
MAX_EXTENSION = 16


def split_extension(name):
    """Split ``"report.final.PDF"`` into ``("report.final", ".PDF")``.

    Leading dots do not start an extension (``".bashrc"`` has none), and
    overly long or non-alphanumeric "extensions" are treated as part of the stem.
    """
    dot = name.rfind(".")
    if dot <= 0 or dot == len(name) - 1:
        return name, ""
    ext = name[dot:]
    if len(ext) > MAX_EXTENSION or not ext[1:].isalnum():
        return name, ""
    return name[:dot], ext


def safe_filename(name, max_length=255, replacement="_", fallback="untitled"):
    """Turn an uploaded file's name into a safe base name of at most ``max_length`` bytes.

    Directory parts are dropped, forbidden characters replaced, Windows device
    names defused and the extension (lower-cased) kept when truncating.
    """
    if len(replacement) != 1 or FORBIDDEN.match(replacement):
        raise ValueError("replacement must be a single allowed character")
    name = unicodedata.normalize("NFC", name)
    name = name.replace("\\", "/").rsplit("/", 1)[-1]
    name = FORBIDDEN.sub(replacement, name)
    name = re.sub(r"\s+", " ", name)
    name = re.sub(re.escape(replacement) + "{2,}", replacement, name)
    name = name.strip(" .")
    stem, ext = split_extension(name)
    stem = stem.rstrip(" .")
    if not stem:
        stem = fallback
    if stem.split(".")[0].upper() in WINDOWS_RESERVED:
        stem = replacement + stem
    ext = ext.lower()
    budget = max_length - len(ext.encode("utf-8"))
    if budget < 1:
        raise ValueError(f"max_length {max_length} leaves no room for a name")
    encoded = stem.encode("utf-8")
    if len(encoded) > budget:
        stem = encoded[:budget].decode("utf-8", errors="ignore").rstrip(" .") or fallback[:budget]
    return stem + ext


def slugify(text, separator="-", max_length=80):
    """Lower-case ASCII slug for URLs: ``"Crème Brûlée!"`` -> ``"creme-brulee"``."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    words = re.findall(r"[a-z0-9]+", ascii_text.lower())
    slug = separator.join(words)
    if len(slug) > max_length:
        slug = slug[:max_length].rsplit(separator, 1)[0]
    return slug


def unique_name(name, existing):
    """Return ``name``, or ``"name (2).ext"``, ``"name (3).ext"``... if it is taken.

    Comparison is case-insensitive, as on Windows and default macOS volumes.
    """
    taken = {n.lower() for n in existing}
    if name.lower() not in taken:
        return name
    stem, ext = split_extension(name)
    stem = re.sub(r" \(\d+\)$", "", stem)
    counter = 2
    while f"{stem} ({counter}){ext}".lower() in taken:
        counter += 1
    return f"{stem} ({counter}){ext}"
