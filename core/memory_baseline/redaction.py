"""One redaction for everything the package prints or writes about itself.

A connection string's password must never reach a terminal, a log or a file,
and the text that carries it is often one the URL parser has just rejected
(`invalid percent-encoded token: "50%off"`), so a pattern for well-formed URLs
is not enough. `redact` masks, in any text:

- the literal value of every credential-bearing environment variable
  (`DATABASE_URL`, `PGPASSWORD`, `OLLAMA_HOST`) that holds a secret, and the
  pieces of those values that can hold a password: a URL's password (however
  malformed the rest), a `password=` keyword or query parameter, each in its
  raw, percent-decoded, percent-encoded, JSON- and repr-escaped spelling; a
  `DATABASE_URL` the parser rejects is masked word by word as well;
- any password in a well-formed URL or `password=` keyword, wherever it came from.

The CLI passes everything it prints through it (`guarded_output`: stdout,
stderr, log records), and its `--debug` traceback too (`install_excepthook`);
run manifests are written through it (`memory_lab.runs.write_json`); libpq's
`PQconninfo` likewise masks a password before it shows a connection.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import re
import sys
import traceback
from collections.abc import Iterator
from typing import Any, TextIO
from urllib.parse import quote, unquote

MASK = "***"
CREDENTIAL_ENV = ("DATABASE_URL", "PGPASSWORD", "OLLAMA_HOST")
# A value this short is masked only where it is quoted or in a URL's password position:
# masking a two-letter password everywhere would garble every message.
MIN_BARE_SECRET = 3

_URL_PASSWORD = re.compile(r"(://[^:/@\s]*:)[^@\s]*@")
_KEYWORD_PASSWORD = re.compile(r"((?:ssl)?password\s*=\s*)('(?:[^'\\]|\\.)*'?|[^\s&]+)", re.I)
_QUERY_PASSWORD = re.compile(r"[?&](?:ssl)?password=([^&#]*)", re.I)


def redact_url(text: str) -> str:
    """`text` with any password of a well-formed URL or `password=` keyword replaced by `***`."""
    text = _URL_PASSWORD.sub(rf"\1{MASK}@", text)
    return _KEYWORD_PASSWORD.sub(rf"\1{MASK}", text)


def redact(text: str, *, shapes: bool = True) -> str:
    """`text` with every configured credential masked (see the module docstring).

    `shapes=False` masks only the configured credentials, leaving other URLs and
    `password=` text alone (a passage of the corpus may quote one).
    """
    if not text:
        return text
    literals, bare, quoted = _masks(_environment())
    for literal, replacement in literals:
        text = text.replace(literal, replacement)
    for secret in bare:
        text = text.replace(secret, MASK)
    for secret in quoted:
        for mark in ('"', "'"):
            text = text.replace(f"{mark}{secret}{mark}", f"{mark}{MASK}{mark}")
    return redact_url(text) if shapes else text


def _environment() -> tuple[tuple[str, str], ...]:
    return tuple((name, os.environ.get(name) or "") for name in CREDENTIAL_ENV)


@functools.lru_cache(maxsize=8)
def _masks(environment: tuple[tuple[str, str], ...]
           ) -> tuple[list[tuple[str, str]], list[str], list[str]]:
    """(literal values and what replaces them, secrets masked anywhere, secrets masked
    where quoted), each longest first so that a secret inside another is masked whole."""
    found: set[str] = set()
    literals: list[str] = []
    userinfos: list[str] = []
    for name, value in environment:
        if not value.strip():
            continue
        if name == "PGPASSWORD":
            found.add(value)
            continue
        parts = _secret_parts(value)
        if name == "DATABASE_URL" and not _parses(value):
            # Where the parser gives up, any word of the value may be (part of) the secret,
            # and it quotes words as far as a space or an '='.
            parts |= {value} | {piece for word in value.split()
                                for piece in (word, *word.split("="))} - _keywords()
        if parts:
            literals.append(value)
            userinfos += _userinfos(value)
        found |= parts
    spelled: set[str] = set()
    for secret in found:
        spelled |= {secret, unquote(secret), quote(secret, safe=""), quote(secret),
                    json.dumps(secret)[1:-1], repr(secret)[1:-1], _escaped(secret)}
    quoted = sorted((s for s in spelled if s.strip()), key=len, reverse=True)
    bare = [s for s in quoted if len(s.strip()) >= MIN_BARE_SECRET]

    def masked(text: str) -> str:
        for secret in quoted:
            text = text.replace(secret, MASK)
        return redact_url(text)

    # A whole value is replaced by itself with its secrets masked (a pattern alone can stop
    # short inside a malformed one); a user:password by the user name and the mask.
    replacements = {value: masked(value) for value in literals}
    for userinfo in userinfos:
        replacements.setdefault(userinfo, userinfo.split(":", 1)[0] + ":" + MASK)
    return (sorted(replacements.items(), key=lambda item: len(item[0]), reverse=True), bare, quoted)


def _secret_parts(value: str) -> set[str]:
    """The pieces of a connection string that can hold a password, however malformed."""
    parts = {userinfo.split(":", 1)[1] for userinfo in _userinfos(value)}
    # In a URL a query parameter ends at '&' (spaces and all); a keyword value at a space,
    # unless quoted (an unterminated quote runs to the end).
    for match in _QUERY_PASSWORD.finditer(value):
        parts.add(match.group(1))
    for match in _KEYWORD_PASSWORD.finditer(value):
        raw = match.group(2)
        parts |= {raw, raw.strip("'"), raw.strip("'").replace("\\'", "'").replace("\\\\", "\\")}
    return {p for p in parts if p}


def _userinfos(value: str) -> list[str]:
    """Every `user:password` a URL can be read to start with.

    The password ends at an '@'; which one is ambiguous when it holds an '@' itself,
    and a parser reads a '/', '?' or '#' before it as the end of the host (taking the
    password for a port), so every such candidate is taken.
    """
    scheme = value.find("://")
    if scheme < 0:
        return []
    rest = value[scheme + 3:]
    ends: set[int] = set()
    for at in (i for i, c in enumerate(rest) if c == "@"):
        ends |= {at} | {i for i, c in enumerate(rest[:at]) if c in "/?#"}
    return [rest[:end] for end in sorted(ends) if ":" in rest[:end]]


@functools.cache
def _keywords() -> frozenset[str]:
    """libpq's option names (`host`, `port`, ...): words of a value that hold no secret."""
    from psycopg import pq

    return frozenset(option.keyword.decode() for option in pq.Conninfo.get_defaults())


def _parses(value: str) -> bool:
    try:
        from psycopg.conninfo import conninfo_to_dict

        conninfo_to_dict(value)
    except Exception:  # any refusal: the value is not a connection string we can read
        return False
    return True


def _escaped(text: str) -> str:
    return "".join(c if c.isprintable() or c == " " else c.encode("unicode_escape").decode()
                   for c in text)


# -- output paths -------------------------------------------------------------------------

# Control characters a result (a file name, a passage) could carry to the terminal: C0
# but newline and tab, DEL, C1. JSON escapes C0 itself; DEL and C1 become \u escapes
# there, which decode to the same string.
_TEXT_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_JSON_CONTROLS = re.compile("[\x7f-\x9f]")


def terminal_safe(text: str, *, json_output: bool = False) -> str:
    """`text` with control characters escaped, so printing it cannot drive the terminal."""
    if json_output:
        return _JSON_CONTROLS.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return _TEXT_CONTROLS.sub(lambda m: m.group().encode("unicode_escape").decode(), text)


class _RedactingStream:
    """A text stream whose writes pass through `redact` (everything else is delegated)."""

    def __init__(self, stream: TextIO, *, shapes: bool, escape: Any = None) -> None:
        self._stream = stream
        self._shapes = shapes
        self._escape = escape

    def write(self, text: str) -> int:
        shown = redact(text, shapes=self._shapes)
        self._stream.write(self._escape(shown) if self._escape else shown)
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextlib.contextmanager
def guarded_output(*, json_output: bool = False) -> Iterator[None]:
    """Redact everything written to stdout, stderr and the log while the block runs.

    Results on stdout are masked of configured credentials only, and their control
    characters escaped (`terminal_safe`); stderr (errors, progress bars, warnings) is
    masked of any password-shaped text as well.
    """
    before = sys.stdout, sys.stderr
    sys.stdout = _RedactingStream(
        sys.stdout, shapes=False,
        escape=lambda text: terminal_safe(text, json_output=json_output))
    sys.stderr = _RedactingStream(sys.stderr, shapes=True)
    handlers = _log_handlers()
    for handler in handlers:
        handler.addFilter(_redact_record)
    try:
        yield
    finally:
        for handler in handlers:
            handler.removeFilter(_redact_record)
        sys.stdout, sys.stderr = before


def _log_handlers() -> list[logging.Handler]:
    handlers = [logging.lastResort] if logging.lastResort is not None else []
    for logger in [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]:
        handlers += getattr(logger, "handlers", [])
    return list(dict.fromkeys(handlers))


def _redact_record(record: logging.LogRecord) -> bool:
    record.msg = redact(record.getMessage())
    record.args = None
    if record.exc_info:
        record.exc_text = redact("".join(traceback.format_exception(*record.exc_info)))
        record.exc_info = None
    return True


def install_excepthook() -> None:
    """Let an uncaught exception print its traceback with credentials masked (`--debug`)."""
    if getattr(sys.excepthook, "_redacting", False):
        return

    def hook(kind: type[BaseException], exc: BaseException, tb: Any) -> None:
        sys.stderr.write(redact("".join(traceback.format_exception(kind, exc, tb))))

    hook._redacting = True  # type: ignore[attr-defined]
    sys.excepthook = hook
