"""Plain-text paragraph layout for terminal help screens and e-mails.

Supports greedy word wrapping, full justification, hanging indents and
bulleted lists.  Words longer than the line width are split hard.
"""


def split_long_word(word, width):
    """Cut ``word`` into pieces of at most ``width`` characters."""
    return [word[i:i + width] for i in range(0, len(word), width)]


def wrap_words(text, width):
    """Greedily pack the words of ``text`` into lines of at most ``width`` characters."""
    if width < 1:
        raise ValueError("width must be at least 1")
    lines = []
    current = ""
    for word in text.split():
        pieces = split_long_word(word, width) if len(word) > width else [word]
        for piece in pieces:
            if not current:
                current = piece
            elif len(current) + 1 + len(piece) < width:
                current += " " + piece
            else:
                lines.append(current)
                current = piece
    if current:
        lines.append(current)
    return lines


def justify_line(line, width):
    """Stretch the gaps between words so ``line`` is exactly ``width`` wide."""
    words = line.split()
    if len(words) < 2:
        return line.ljust(width)
    gaps = len(words) - 1
    spaces = width - sum(len(w) for w in words)
    base, extra = divmod(spaces, gaps)
    out = []
    for i, word in enumerate(words[:-1]):
        out.append(word + " " * (base + (1 if i < extra else 0)))
    out.append(words[-1])
    return "".join(out)


def fill(text, width=72, indent="", subsequent_indent=None, justify=False):
    """Wrap one paragraph, with an optional first-line and hanging indent."""
    if subsequent_indent is None:
        subsequent_indent = indent
    room = width - max(len(indent), len(subsequent_indent))
    lines = wrap_words(text, room)
    out = []
    for i, line in enumerate(lines):
        if justify and i < len(lines) - 1:
            line = justify_line(line, room)
        out.append((indent if i == 0 else subsequent_indent) + line)
    return "\n".join(out)


def format_paragraphs(text, width=72, justify=False):
    """Re-flow blank-line separated paragraphs, keeping the blank lines."""
    paragraphs = [p for p in text.split("\n\n") if p.strip()]
    return "\n\n".join(fill(p, width, justify=justify) for p in paragraphs)


def bullet_list(items, width=72, bullet="-"):
    """Render ``items`` as a bulleted list whose continuation lines line up."""
    marker = bullet + " "
    return "\n".join(
        fill(item, width, indent=marker, subsequent_indent=" " * len(marker)) for item in items
    )
