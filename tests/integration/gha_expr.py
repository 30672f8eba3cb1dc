"""GitHub Actions expressions (`${{ … }}`), evaluated as GitHub does, for the step runner.

Literals, context paths (`a.b`, `a['b']`, `a.*.b`), `!`, comparisons (strings compare
case-insensitively, mixed types as numbers), `&&` / `||` returning an operand, and the
functions the workflows use. Anything else raises, so an unsupported expression fails the
test instead of evaluating to something GitHub would not.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

_TOKEN = re.compile(r"\s*(?:(?P<num>-?\d+(?:\.\d+)?)|(?P<str>'(?:[^']|'')*')|"
                    r"(?P<op>==|!=|<=|>=|&&|\|\||[!<>()\[\],.*])|(?P<name>[A-Za-z_][\w-]*))")
_WHOLE = re.compile(r"^\s*\$\{\{(.*?)\}\}\s*$", re.S)
_PART = re.compile(r"\$\{\{(.*?)\}\}", re.S)


class ExprError(Exception):
    pass


def _tokens(text: str) -> list[tuple[str, str]]:
    out, pos = [], 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise ExprError(f"cannot read {text[pos:]!r} in {text!r}")
        kind = m.lastgroup or ""
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out


def truthy(v: Any) -> bool:
    if isinstance(v, float) and math.isnan(v):
        return False
    return v not in (None, False, 0, "") and not (isinstance(v, float) and v == 0)


def _number(v: Any) -> float:
    if v is None:
        return 0.0
    if isinstance(v, bool):
        return 1.0 if v else 0.0
    if isinstance(v, int | float):
        return float(v)
    if isinstance(v, str):
        try:
            return float(v) if v.strip() else 0.0
        except ValueError:
            return math.nan
    return math.nan


def _compare(a: Any, b: Any) -> tuple[Any, Any]:
    if isinstance(a, str) and isinstance(b, str):
        return a.lower(), b.lower()
    if type(a) is type(b) and not isinstance(a, dict | list):
        return a, b
    return _number(a), _number(b)


def to_string(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    if isinstance(v, dict | list):
        return json.dumps(v)
    return str(v)


def _format(fmt: str, *args: Any) -> str:
    return re.sub(r"\{(\d+)\}", lambda m: to_string(args[int(m.group(1))]),
                  fmt.replace("{{", "\0").replace("}}", "\1")).replace("\0", "{").replace(
                      "\1", "}")


class Parser:
    def __init__(self, text: str, context: dict[str, Any],
                 status: dict[str, Callable[[], bool]]) -> None:
        self.toks, self.i, self.ctx, self.status = _tokens(text), 0, context, status
        self.text = text

    def peek(self) -> str:
        return self.toks[self.i][1] if self.i < len(self.toks) else ""

    def take(self, want: str | None = None) -> tuple[str, str]:
        if self.i >= len(self.toks):
            raise ExprError(f"unexpected end of {self.text!r}")
        tok = self.toks[self.i]
        if want is not None and tok[1] != want:
            raise ExprError(f"expected {want!r}, got {tok[1]!r} in {self.text!r}")
        self.i += 1
        return tok

    def parse(self) -> Any:
        value = self.or_()
        if self.i != len(self.toks):
            raise ExprError(f"trailing {self.peek()!r} in {self.text!r}")
        return value

    def or_(self) -> Any:
        value = self.and_()
        while self.peek() == "||":
            self.take()
            right = self.and_()
            value = value if truthy(value) else right
        return value

    def and_(self) -> Any:
        value = self.cmp()
        while self.peek() == "&&":
            self.take()
            right = self.cmp()
            value = right if truthy(value) else value
        return value

    def cmp(self) -> Any:
        value = self.unary()
        while self.peek() in ("==", "!=", "<", ">", "<=", ">="):
            op = self.take()[1]
            a, b = _compare(value, self.unary())
            value = {"==": a == b, "!=": a != b, "<": a < b, ">": a > b, "<=": a <= b,
                     ">=": a >= b}[op]
        return value

    def unary(self) -> Any:
        if self.peek() == "!":
            self.take()
            return not truthy(self.unary())
        return self.postfix(self.primary())

    def primary(self) -> Any:
        kind, tok = self.take()
        if tok == "(":
            value = self.or_()
            self.take(")")
            return value
        if kind == "num":
            return float(tok) if "." in tok else int(tok)
        if kind == "str":
            return tok[1:-1].replace("''", "'")
        if kind != "name":
            raise ExprError(f"unexpected {tok!r} in {self.text!r}")
        if tok in ("true", "false", "null"):
            return {"true": True, "false": False, "null": None}[tok]
        if self.peek() == "(":
            return self.call(tok)
        if tok not in self.ctx:
            raise ExprError(f"unknown context {tok!r} in {self.text!r}")
        return self.ctx[tok]

    def postfix(self, value: Any) -> Any:
        while self.peek() in (".", "["):
            if self.take()[1] == ".":
                name = self.take()[1]
                value = ([_get(v, None) for v in (value.values() if isinstance(value, dict)
                                                  else value or [])]
                         if name == "*" else _get(value, name))
            else:
                key = self.or_()
                self.take("]")
                value = _get(value, key)
        return value

    def call(self, name: str) -> Any:
        self.take("(")
        args = []
        while self.peek() != ")":
            args.append(self.or_())
            if self.peek() == ",":
                self.take()
        self.take(")")
        low = name.lower()
        if low in self.status:
            return self.status[low]()
        funcs: dict[str, Callable[..., Any]] = {
            "fromjson": lambda s: json.loads(s),
            "tojson": lambda v: json.dumps(v, indent=2),
            "join": lambda a, sep=",": sep.join(to_string(x) for x in a)
            if isinstance(a, list) else to_string(a),
            "format": _format,
            "contains": lambda h, n: (to_string(n).lower() in to_string(h).lower()
                                      if not isinstance(h, list) else
                                      any(_compare(x, n)[0] == _compare(x, n)[1] for x in h)),
            "startswith": lambda s, p: to_string(s).lower().startswith(to_string(p).lower()),
            "endswith": lambda s, p: to_string(s).lower().endswith(to_string(p).lower()),
        }
        if low not in funcs:
            raise ExprError(f"function {name}() is not emulated")
        return funcs[low](*args)


def _get(value: Any, key: Any) -> Any:
    if isinstance(value, dict):
        if key is None:
            return value
        found = {str(k).lower(): v for k, v in value.items()}
        return found.get(str(key).lower())
    if isinstance(value, list) and isinstance(key, int | float):
        return value[int(key)] if int(key) < len(value) else None
    if isinstance(value, list) and key is not None:
        return [_get(v, key) for v in value]
    return None


def evaluate(text: str, context: dict[str, Any],
             status: dict[str, Callable[[], bool]] | None = None) -> Any:
    """One expression (the inside of `${{ }}`, or an `if:` without it)."""
    return Parser(text, context, status or {}).parse()


def render(value: Any, context: dict[str, Any],
           status: dict[str, Callable[[], bool]] | None = None) -> Any:
    """A YAML value with `${{ }}` inside: a lone expression keeps its type, text around one
    makes a string; mappings and lists are rendered throughout."""
    if isinstance(value, dict):
        return {k: render(v, context, status) for k, v in value.items()}
    if isinstance(value, list):
        return [render(v, context, status) for v in value]
    if not isinstance(value, str) or "${{" not in value:
        return value
    whole = _WHOLE.match(value)
    if whole and "${{" not in whole.group(1):
        return evaluate(whole.group(1), context, status)
    return _PART.sub(lambda m: to_string(evaluate(m.group(1), context, status)), value)


def condition(text: Any, context: dict[str, Any],
              status: dict[str, Callable[[], bool]]) -> bool:
    """An `if:` (with or without `${{ }}`); with no status function in it, success() is
    implied, as on GitHub."""
    if isinstance(text, bool):
        return text
    inner = _WHOLE.match(str(text))
    expr = inner.group(1) if inner else str(text)
    if not re.search(r"\b(always|success|failure|cancelled)\s*\(", expr):
        expr = f"success() && ({expr})"
    return truthy(evaluate(expr, context, status))
