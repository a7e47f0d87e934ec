"""The block-rewrite edit format of the code actions: the model writes the whole new block, we diff it.

Small models rarely quote `old_text` exactly, and JSON-escaping a block of code inside a tool call is
harder for them still. For an action on a range they write the complete new version of the block in a
fenced code block instead; the edit is the difference between the old block and the new one. Plain
text only: no LSP types, no model.
"""

from __future__ import annotations

import ast
import difflib
import io
import re
import textwrap
import tokenize

from . import languages
from .edits import indent_of, indent_step, moved, split_lines

# A fenced block: ``` or ~~~, an optional language tag, the code, the closing fence.
_FENCE = re.compile(r"^(?P<fence>```|~~~)[^\n]*\n(?P<code>.*?)^(?P=fence)[ \t]*$", re.DOTALL | re.MULTILINE)
_OPEN_FENCE = re.compile(r"^(```|~~~)[^\n]*\n", re.MULTILINE)


DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def definition_lines(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> tuple[int, int]:
    """The 1-based inclusive lines of a function or class, its decorators included."""
    return min([node.lineno, *(d.lineno for d in node.decorator_list)]), node.end_lineno or node.lineno


def enclosing_block(text: str, first: int, last: int, python: bool) -> tuple[int, int]:
    """The 1-based inclusive lines a rewrite should cover for a selection of lines first..last.

    In Python, the smallest function or class that holds the whole selection (with its decorators),
    so that the model writes a unit it can reason about; elsewhere, or where nothing encloses it, the
    selected lines themselves.
    """
    if not python:
        return first, last
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return first, last
    best: tuple[int, int] | None = None
    for node in ast.walk(tree):
        if not isinstance(node, DEFINITIONS):
            continue
        start, end = definition_lines(node)
        if start <= first and last <= end and (best is None or end - start < best[1] - best[0]):
            best = (start, end)
    return best if best is not None else (first, last)


def _definition_spanning(
    tree: ast.Module, first: int, last: int
) -> ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | None:
    """The function or class whose lines (decorators included) are exactly first..last."""
    for node in ast.walk(tree):
        if isinstance(node, DEFINITIONS) and definition_lines(node) == (first, last):
            return node
    return None


def the_unit_written(source: str, first: int, last: int, block: str) -> tuple[str, str | None]:
    """The block as the definition at lines first..last of source, and why it cannot be that (None: it
    can), for a Python block that replaces a whole function or class.

    A small model asked for a method sometimes writes its whole class around it (with the other methods
    left out): the method is taken out of it. One that writes another function, or renames this one,
    does more than it was asked: refused, with the name it must write.
    """
    dedented = textwrap.dedent(block)
    try:
        target = _definition_spanning(ast.parse(source), first, last)
        written = ast.parse(dedented)
    except (SyntaxError, ValueError):
        return block, None  # placing it tells the model what is wrong with it
    if target is None:
        return block, None
    top = [node for node in written.body if isinstance(node, DEFINITIONS)]
    if any(node.name == target.name for node in top):
        return block, None
    lines = split_lines(dedented)
    for node in top:  # the class around the method
        if isinstance(node, ast.ClassDef) and not isinstance(target, ast.ClassDef):
            method = next(
                (m for m in node.body if isinstance(m, DEFINITIONS) and m.name == target.name), None
            )
            if method is not None:
                start, end = definition_lines(method)
                return "".join(lines[start - 1 : end]), None
    if not top and isinstance(target, ast.FunctionDef | ast.AsyncFunctionDef):
        body = _under_signature(source, target, dedented, written)
        if body is not None:
            return body, None
    names = ", ".join(f"`{node.name}`" for node in top) or "no function"
    return block, (
        f"That block defines {names}, and the code to write again is `{target.name}`: write `{target.name}`, "
        "complete, with the same name and parameters, and nothing else."
    )


# How alike a block without a `def` must be to the function's body to be taken as that body, rewritten
# (difflib's ratio over stripped lines): a few lines of it would otherwise replace the whole function.
BODY_LIKENESS = 0.6


def _under_signature(
    source: str, target: ast.FunctionDef | ast.AsyncFunctionDef, fragment: str, written: ast.Module
) -> str | None:
    """The function with `fragment` as its body, where the model wrote the body alone (no `def` line):
    the function's own decorators, signature and (unless the fragment has one) docstring, then the
    fragment at the body's indentation. None where the fragment is not like the body it replaces."""
    lines = split_lines(source)
    first, last = definition_lines(target)
    body_line = target.body[0].lineno
    if body_line == target.lineno:
        return None  # `def f(): return 1`: no body lines of its own
    docstring = _docstring(target)
    written_docstring = _docstring(written) is not None
    header_end = docstring.end_lineno if docstring is not None and not written_docstring else body_line - 1
    old_body = [line.strip() for line in lines[header_end:last] if line.strip()]
    new_body = [line.strip() for line in fragment.splitlines() if line.strip()]
    if difflib.SequenceMatcher(a=old_body, b=new_body, autojunk=False).ratio() < BODY_LIKENESS:
        return None
    indent = indent_of(lines[body_line - 1])
    body = "".join(indent + line if line.strip() else line for line in split_lines(fragment))
    return "".join(lines[first - 1 : header_end]) + body


def undocumented_function(source: str, first: int, last: int) -> str | None:
    """The name of the function at lines first..last of Python source when it has no docstring and a
    body of its own lines (where a docstring alone can go); else None."""
    target = _undocumented(source, first, last)
    return target.name if target is not None else None


def _undocumented(source: str, first: int, last: int) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    try:
        target = _definition_spanning(ast.parse(source), first, last)
    except (SyntaxError, ValueError):
        return None
    if (
        isinstance(target, ast.FunctionDef | ast.AsyncFunctionDef)
        and _docstring(target) is None
        and target.body[0].lineno > target.lineno
    ):
        return target
    return None


def documented_by(source: str, first: int, last: int, block: str) -> str | None:
    """The function at lines first..last with the docstring that `block` holds put under its signature,
    where `block` is a docstring alone (or the `def` line and a docstring, and no code); None otherwise.

    Writing only the docstring is the cheapest Document there is, and it cannot touch the code."""
    target = _undocumented(source, first, last)
    written_lines = split_lines(textwrap.dedent(block))
    try:
        docstring = _docstring_alone(ast.parse("".join(written_lines)))
    except (SyntaxError, ValueError):
        return None
    if target is None or docstring is None:
        return None
    text = written_lines[docstring.lineno - 1 : docstring.end_lineno]
    own = indent_of(text[0])
    if docstring.col_offset != len(own.encode()):
        return None  # it shares its line with other code (`def f(): """..."""`)
    # Its lines as written, moved from the docstring's own indentation to the body's.
    lines = split_lines(source)
    indent = indent_of(lines[target.body[0].lineno - 1])
    placed = [indent + line.removeprefix(own) if line.strip() else line for line in text]
    placed[-1] = placed[-1].rstrip() + "\n"
    at = target.body[0].lineno - 1
    return "".join(lines[first - 1 : at] + placed + lines[at:last])


def _docstring_alone(written: ast.Module) -> ast.Expr | None:
    """The docstring of a block that holds nothing else: a docstring, or a `def` with a docstring and at
    most a placeholder for its body."""
    if len(written.body) != 1:
        return None
    only = written.body[0]
    if isinstance(only, ast.FunctionDef | ast.AsyncFunctionDef):
        return _docstring(only) if all(_is_placeholder(s) for s in only.body[1:]) else None
    return _docstring(written)


def _is_placeholder(statement: ast.stmt) -> bool:
    """`pass` or `...`: what stands for a body left out."""
    return isinstance(statement, ast.Pass) or (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and statement.value.value is Ellipsis
    )


def code_block(answer: str) -> str | None:
    """The code the model wrote: the longest fenced block, or an unclosed one cut by the token limit."""
    blocks = [match.group("code") for match in _FENCE.finditer(answer)]
    if blocks:
        return max(blocks, key=len)
    opened = _OPEN_FENCE.search(answer)
    return answer[opened.end() :] if opened else None


def replace_lines(text: str, first: int, last: int, block: str) -> str:
    """text with lines first..last (1-based, inclusive) replaced by block, at the lines' indentation.

    Models often write a method without its class's indentation, or with tabs in a file of spaces; the
    block is moved to where the old first line was, in the file's step of indentation (edits.moved).
    The old lines' line ending is kept.
    """
    lines = split_lines(text)
    old = lines[first - 1 : last]
    ending = "\r\n" if old and old[0].endswith("\r\n") else "\n"
    new = [line.rstrip("\r\n") for line in split_lines(block)]
    while new and not new[-1].strip():
        new.pop()
    while new and not new[0].strip():
        new.pop(0)
    target = next((indent_of(line) for line in old if line.strip()), "")
    new = moved(new, indent_of(new[0]) if new else "", target, indent_step(lines))
    replaced = "".join(line + ending for line in new)
    if last == len(lines) and old and not old[-1].endswith(("\n", "\r")):
        replaced = replaced[: -len(ending)]  # the file had no final line ending: keep it that way
    return "".join(lines[: first - 1]) + replaced + "".join(lines[last:])


def python_code_changed(before: str, after: str) -> bool:
    """Whether two Python sources differ beyond docstrings (and formatting): Document must not do that."""

    def code(source: str) -> str:
        tree = ast.parse(source)
        for node in ast.walk(tree):
            if _docstring(node) is not None:
                node.body = node.body[1:] or [ast.Pass()]  # type: ignore[attr-defined]
        return ast.dump(tree)

    return code(before) != code(after)


def _adds_comment(line: str, rewritten: str) -> bool:
    """Whether rewritten is line with a comment put at its end (and nothing else changed)."""
    code, rewritten = line.rstrip(), rewritten.rstrip()
    return "#" not in code and rewritten.startswith(code) and rewritten[len(code) :].lstrip().startswith("#")


def _documentation_lines(source: str) -> set[int]:
    """0-based numbers of the lines of source that are comments or docstrings."""
    lines = split_lines(source)
    found = {n for n, line in enumerate(lines) if line.lstrip().startswith("#")}
    for node in ast.walk(ast.parse(source)):
        if (docstring := _docstring(node)) is not None:
            found.update(range(docstring.lineno - 1, docstring.end_lineno or docstring.lineno))
    return found


def _docstring(node: ast.AST) -> ast.Expr | None:
    """The docstring statement of a module, class or function, if it has one."""
    if not isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
        return None
    head = node.body[0] if node.body else None
    is_text = (
        isinstance(head, ast.Expr)
        and isinstance(head.value, ast.Constant)
        and isinstance(head.value.value, str)
    )
    return head if is_text else None  # type: ignore[return-value]


def added_documentation(before: str, after: str) -> str | None:
    """before with only the comments and docstrings that after adds, every line of code kept as it was.

    A model asked to document code also retouches it now and then (quotes, spacing, a type hint). The
    lines of before stay the user's own, in their order; each documentation line that after adds goes
    where after puts it relative to them. None when that gives anything but before's code with more
    documentation (after does not parse, or its documentation does not fit back in).
    """
    try:
        documentation = _documentation_lines(after)
    except (SyntaxError, ValueError):
        return None
    old, new = split_lines(before), split_lines(after)
    ending = "\r\n" if old and old[0].endswith("\r\n") else "\n"
    known = {line.strip() for line in old}
    added = {j for j in documentation if new[j].strip() not in known}
    kept = [j for j in range(len(new)) if j not in added]  # after's lines that stand for before's
    # before's lines, each attached to the kept line of after it stands for (or the next one)
    attached: dict[int, list[str]] = {}
    matcher = difflib.SequenceMatcher(
        a=[line.strip() for line in old], b=[new[j].strip() for j in kept], autojunk=False
    )
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag in ("equal", "replace") and i2 - i1 == j2 - j1:
            for offset in range(i2 - i1):
                line, rewritten = old[i1 + offset], new[kept[j1 + offset]]
                if _adds_comment(line, rewritten):
                    line = rewritten.rstrip("\r\n") + ending
                attached.setdefault(j1 + offset, []).append(line)
        else:  # lines after added or dropped: before's lines go where the region starts
            attached.setdefault(j1, []).extend(old[i1:i2])
    merged: list[str] = []
    for position, j in enumerate(kept):
        for doc in range(kept[position - 1] + 1 if position else 0, j):
            merged.append(new[doc].rstrip("\r\n") + ending)
        merged.extend(attached.get(position, []))
    merged.extend(new[doc].rstrip("\r\n") + ending for doc in range(kept[-1] + 1 if kept else 0, len(new)))
    merged.extend(attached.get(len(kept), []))
    result = "".join(merged)
    try:
        return None if python_code_changed(before, result) else result
    except (SyntaxError, ValueError):
        return None


def only_documentation(suffix: str, before: str, after: str) -> str | None:
    """before with only the documentation that after adds, every line of code kept as it is: Python's
    docstrings and comments (added_documentation), other languages' comment lines. None when that cannot
    be told apart: the language is not one whose comments can be told from its code (languages.py), a
    Python answer does not parse, or what would be taken does more than add comments (adds_only_comments).

    Where the lines of a Python answer cannot be merged back (it rewrote an existing docstring, or its
    new docstring shares lines such as `Args:` with others in the file), after itself is taken if its
    syntax tree is before's but for docstrings: the code then does the same, though its formatting may
    differ."""
    language = languages.for_suffix(suffix)
    if language is None:
        return None
    if language.grammar is None:
        documented = _python_documentation(before, after)
    else:
        documented = _added_comment_lines(before, after, language)
    if documented is None or not adds_only_comments(language, before, documented):
        return None
    return documented


def _python_documentation(before: str, after: str) -> str | None:
    """Python's docstrings and comments that after adds, merged into before, or after itself."""
    merged = added_documentation(before, after)
    if merged is not None:
        return merged
    try:
        return None if python_code_changed(before, after) else after
    except (SyntaxError, ValueError):
        return None


def adds_only_comments(language: languages.Language, before: str, documented: str) -> bool:
    """Whether documented is before with comments added and nothing else, as the compiler reads both:
    the last check of a documentation edit, whatever produced it (a merge of lines, or a Python answer
    taken whole).

    In every language, no comment may hold a character that some language reads as a line end, nor
    add or change a `#!` line. Python: the syntax tree, which is what Python runs, is before's but for
    docstrings, and so is the encoding the file is read in (a coding comment changes it, and the tree
    cannot see that). Other languages: before's lines are all kept, byte for byte; each line added is a
    comment by the language's own tokenizer, and no directive; and the code, comments left out, read as
    the compiler reads it, is the same nodes as before's (the parser's ERROR and MISSING nodes among
    them: a comment that makes the code parse otherwise, or not at all, is refused)."""
    compiled_before, compiled = language.as_compiled(before), language.as_compiled(documented)
    if len(languages.ODD_LINE_ENDS.findall(compiled)) > len(languages.ODD_LINE_ENDS.findall(compiled_before)):
        return False
    if _shebang(documented) != _shebang(before):
        return False
    if language.grammar is None:
        try:
            same_code = not python_code_changed(before, documented)
        except (SyntaxError, ValueError):
            return False
        return same_code and _source_encoding(documented) == _source_encoding(before)
    if language.code_in_comments is not None and language.code_in_comments.search(before):
        return False
    added = _added_lines(before, documented)
    if added is None:
        return False
    lines = split_lines(documented)
    if language.directives is not None and any(language.directives.search(lines[i]) for i in added):
        return False
    written = language.parse(documented)
    if not added <= written.comment_lines():
        return False
    old = language.parse(compiled_before)
    new = written if compiled == documented else language.parse(compiled)
    return new.code == old.code


def _shebang(text: str) -> str | None:
    """The `#!` line that picks a script's interpreter, if the text has one."""
    first = split_lines(text)[:1]
    return first[0].rstrip("\r\n") if first and first[0].startswith("#!") else None


def _source_encoding(source: str) -> str | None:
    """The encoding Python decodes a file in (its coding cookie, or UTF-8), None where it names none
    that Python knows: a comment that names another changes what every byte of the file means."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(source.encode("utf-8", "surrogatepass")).readline)
    except SyntaxError:
        return None
    return encoding


def _added_lines(before: str, after: str) -> set[int] | None:
    """The 0-based indexes of after's lines that before does not have, where after is before with
    lines inserted: before's lines are all there, in order, byte for byte (its last may gain a line
    ending). None where after is not that."""
    old = split_lines(before)
    added, kept = set(), 0
    for index, line in enumerate(split_lines(after)):
        if kept < len(old) and old[kept] in (line, line.rstrip("\r\n")):
            kept += 1
        else:
            added.add(index)
    return added if kept == len(old) else None


def _added_comment_lines(before: str, after: str, language: languages.Language) -> str:
    """before with the whole comment lines that after inserts, at the places where after inserts them."""
    old, new = split_lines(before), split_lines(after)
    ending = "\r\n" if old and old[0].endswith("\r\n") else "\n"
    unterminated = bool(old) and not old[-1].endswith(("\n", "\r"))
    if unterminated:
        old[-1] += ending  # so that a comment added after the last line starts a line of its own
    comment_lines = language.parse(after).comment_lines()
    merged: list[str] = []
    matcher = difflib.SequenceMatcher(a=[x.strip() for x in old], b=[x.strip() for x in new], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            merged.extend(old[i1:i2])
            continue
        region = new[j1:j2]
        comments = {i for i in range(len(region)) if j1 + i in comment_lines}
        code = [i for i in range(len(region)) if i not in comments]
        if len(code) == i2 - i1:  # the region's code lines, retouched: each comment stays where it was
            mine = iter(old[i1:i2])
            merged.extend(
                line.rstrip("\r\n") + ending if i in comments else next(mine) for i, line in enumerate(region)
            )
        else:
            merged.extend(region[i].rstrip("\r\n") + ending for i in sorted(comments))
            merged.extend(old[i1:i2])
    result = "".join(merged)
    return result[: -len(ending)] if unterminated else result
