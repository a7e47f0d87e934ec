"""A small arithmetic evaluator: tokenizer plus recursive-descent parser.

Grammar::

    expression := term (("+" | "-") term)*
    term       := factor (("*" | "/") factor)*
    factor     := ("-" | "+") factor | NUMBER | NAME | "(" expression ")"
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

OPERATORS = "+-*/()"


class ExpressionError(ValueError):
    """Raised for malformed expressions, unknown names and division by zero."""


@dataclass(frozen=True)
class Token:
    kind: str  # "num", "name", "op" or "end"
    text: str
    position: int


def tokenize(source: str) -> list[Token]:
    """Split ``source`` into tokens, ending with a single ``end`` token."""
    tokens: list[Token] = []
    i = 0
    while i < len(source):
        ch = source[i]
        if ch.isspace():
            i += 1
        elif ch.isdigit() or ch == ".":
            start = i
            while i < len(source) and (source[i].isdigit() or source[i] == "."):
                i += 1
            text = source[start:i]
            if text.count(".") > 1 or text == ".":
                raise ExpressionError(f"bad number {text!r} at {start}")
            tokens.append(Token("num", text, start))
        elif ch.isalpha() or ch == "_":
            start = i
            while i < len(source) and (source[i].isalnum() or source[i] == "_"):
                i += 1
            tokens.append(Token("name", source[start:i], start))
        elif ch in OPERATORS:
            tokens.append(Token("op", ch, i))
            i += 1
        else:
            raise ExpressionError(f"unexpected character {ch!r} at {i}")
    tokens.append(Token("end", "", len(source)))
    return tokens


class Parser:
    def __init__(self, tokens: list[Token], variables: Mapping[str, float]) -> None:
        self.tokens = tokens
        self.variables = variables
        self.index = 0

    @property
    def current(self) -> Token:
        return self.tokens[self.index]

    def advance(self) -> Token:
        token = self.tokens[self.index]
        self.index += 1
        return token

    def expect(self, text: str) -> None:
        token = self.advance()
        if token.text != text:
            raise ExpressionError(f"expected {text!r} at {token.position}, got {token.text or 'end'!r}")

    def parse(self) -> float:
        value = self.expression()
        if self.current.kind != "end":
            raise ExpressionError(f"unexpected {self.current.text!r} at {self.current.position}")
        return value

    def expression(self) -> float:
        value = self.term()
        while self.current.kind == "op" and self.current.text in "+-":
            operator = self.advance().text
            right = self.expression()
            if operator == "+":
                value += right
            else:
                value -= right
        return value

    def term(self) -> float:
        value = self.factor()
        while self.current.kind == "op" and self.current.text in "*/":
            operator = self.advance().text
            right = self.factor()
            if operator == "*":
                value *= right
            elif right == 0:
                raise ExpressionError("division by zero")
            else:
                value /= right
        return value

    def factor(self) -> float:
        token = self.current
        if token.kind == "op" and token.text in "+-":
            self.advance()
            operand = self.factor()
            return -operand if token.text == "-" else operand
        if token.kind == "num":
            self.advance()
            return float(token.text)
        if token.kind == "name":
            self.advance()
            if token.text not in self.variables:
                raise ExpressionError(f"unknown name {token.text!r} at {token.position}")
            return float(self.variables[token.text])
        if token.text == "(":
            self.advance()
            value = self.expression()
            self.expect(")")
            return value
        raise ExpressionError(f"unexpected {token.text or 'end'!r} at {token.position}")


def evaluate(source: str, variables: Mapping[str, float] | None = None) -> float:
    """Evaluate an arithmetic expression such as ``"2 * (x - 1) / 4"``."""
    return Parser(tokenize(source), variables or {}).parse()


def evaluate_all(lines: list[str], variables: Mapping[str, float] | None = None) -> dict[str, float]:
    """Evaluate ``name = expression`` lines in order; each result is visible to later lines."""
    scope: dict[str, float] = dict(variables or {})
    results: dict[str, float] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        name, sep, source = line.partition("=")
        name = name.strip()
        if not sep or not name.isidentifier():
            raise ExpressionError(f"line {number}: expected 'name = expression'")
        scope[name] = results[name] = evaluate(source, scope)
    return results
