"""Code-aware chunk spans: a function or class travels whole, with its docstring and comments.

A sentence chunker cuts source code wherever a line ends near the target size,
so a function's signature lands in one chunk and its body in the next, and a
`# comment` line reads as a Markdown heading. Here the unit is a top-level
definition:

- Python by the standard library's `ast`: the module docstring, each
  top-level function and class (decorators and the comment lines directly above
  it included), and the statements between them (imports, constants) as blocks.
  A class longer than the target is split at its method boundaries (the class
  header with the first methods, then further methods, packed up to the
  target); any other unit longer than the target at blank lines, then in windows.
- Other languages by tree-sitter grammars where the grammar's package is
  installed (`PARSERS`: the per-language `tree-sitter-<lang>` wheels ship compiled
  grammars; `tree-sitter-language-pack` 1.x downloads its grammars at first use,
  which this project never does at run time). Units are the top-level nodes.
- Anything else, or a file its parser rejects, by blank-line blocks packed up to
  the target.

Spans are contiguous and exact (`text == source[start:end]`): each unit runs to
the start of the next, so blank lines between definitions stay with the one above.
"""

from __future__ import annotations

import ast
import importlib
import re
from dataclasses import dataclass
from functools import cache
from importlib import metadata

CODE_CHUNKER_VERSION = "code-1"

# File suffix -> (language, grammar module, function returning the language pointer).
PARSERS: dict[str, tuple[str, str, str]] = {
    ".js": ("javascript", "tree_sitter_javascript", "language"),
    ".jsx": ("javascript", "tree_sitter_javascript", "language"),
    ".ts": ("typescript", "tree_sitter_typescript", "language_typescript"),
    ".tsx": ("tsx", "tree_sitter_typescript", "language_tsx"),
    ".go": ("go", "tree_sitter_go", "language"),
    ".rs": ("rust", "tree_sitter_rust", "language"),
    ".java": ("java", "tree_sitter_java", "language"),
    ".c": ("c", "tree_sitter_c", "language"),
    ".h": ("c", "tree_sitter_c", "language"),
}
PYTHON_SUFFIXES = (".py", ".pyi")
# Code read without a grammar (Cython: Python's `ast` cannot parse it, and no grammar wheel
# ships one): cut at blank lines. No file of these types was indexed before they were
# read as code, so no stored chunk changed and the chunker identity does not list them.
BLANK_LINE_SUFFIXES = (".pyx", ".pxd")
_BLANK_LINES = re.compile(r"\n[ \t]*\n")


@dataclass(frozen=True)
class CodeSpan:
    start: int
    end: int
    section: str | None


def _suffix(source_id: str) -> str:
    name = source_id.rsplit("/", 1)[-1].lower()
    return name[name.rfind("."):] if "." in name else ""


def is_code(source_id: str) -> bool:
    suffix = _suffix(source_id)
    return suffix in PYTHON_SUFFIXES or suffix in PARSERS or suffix in BLANK_LINE_SUFFIXES


@cache
def _grammar(module_name: str, function: str):
    """The tree-sitter Language of an installed grammar package, or None."""
    try:
        import tree_sitter

        module = importlib.import_module(module_name)
        return tree_sitter.Language(getattr(module, function)())
    except (ImportError, AttributeError, ValueError):
        return None


def parser_identity() -> dict[str, str]:
    """Which parser cuts each language here; part of the chunker identity."""
    identity = {"version": CODE_CHUNKER_VERSION, "python": "ast"}
    for language, module_name, function in sorted(set(PARSERS.values())):
        if _grammar(module_name, function) is None:
            identity[language] = "blank-lines"
        else:
            package = module_name.replace("_", "-")
            identity[language] = f"{package} {metadata.version(package)}"
    return identity


def code_spans(source_id: str, text: str, target: int) -> list[CodeSpan]:
    """Contiguous spans of `text` cut at definition boundaries (see the module docstring)."""
    suffix = _suffix(source_id)
    units: list[CodeSpan] | None = None
    if suffix in PYTHON_SUFFIXES:
        units = _python_units(text, target)
    elif suffix in PARSERS:
        _, module_name, function = PARSERS[suffix]
        language = _grammar(module_name, function)
        if language is not None:
            units = _tree_sitter_units(text, language)
    if units is None:
        units = [CodeSpan(0, len(text), None)]
    spans: list[CodeSpan] = []
    for unit in units:
        if unit.end - unit.start > target:
            spans.extend(CodeSpan(s, e, unit.section) for s, e in
                         blank_line_blocks(text, unit.start, unit.end, target))
        else:
            spans.append(unit)
    return [s for s in spans if text[s.start:s.end].strip()]


def blank_line_blocks(text: str, start: int, end: int, target: int) -> list[tuple[int, int]]:
    """`text[start:end]` cut at blank lines into pieces packed up to `target`, windows beyond."""
    cuts = [start] + [m.end() for m in _BLANK_LINES.finditer(text, start, end)] + [end]
    cuts = sorted(set(cuts))
    spans: list[tuple[int, int]] = []
    piece_start = cuts[0]
    for previous, cut in zip(cuts, cuts[1:], strict=False):
        if cut - piece_start > target and previous > piece_start:
            spans.append((piece_start, previous))
            piece_start = previous
    spans.append((piece_start, end))
    out: list[tuple[int, int]] = []
    for s, e in spans:
        while e - s > target:  # one block longer than the target: windows at line ends
            cut = text.rfind("\n", s, s + target) + 1
            cut = cut if cut > s else s + target
            out.append((s, cut))
            s = cut
        if e > s:
            out.append((s, e))
    return out


def _line_offsets(text: str) -> list[int]:
    offsets = [0]
    for match in re.finditer("\n", text):
        offsets.append(match.end())
    return offsets


def _comment_start(lines: list[str], line: int, floor: int) -> int:
    """First line (0-based) of the comment block directly above `line`, not above `floor`."""
    while line - 1 >= floor and lines[line - 1].lstrip().startswith("#"):
        line -= 1
    return line


def _python_units(text: str, target: int) -> list[CodeSpan] | None:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    offsets = _line_offsets(text)
    lines = text.splitlines()
    starts: list[tuple[int, str | None, ast.AST | None]] = []  # (0-based line, section, node)
    floor = 0
    for position, node in enumerate(tree.body):
        first = min([node.lineno, *[d.lineno for d in getattr(node, "decorator_list", [])]]) - 1
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            kind = "class" if isinstance(node, ast.ClassDef) else "def"
            starts.append((_comment_start(lines, first, floor), f"{kind} {node.name}", node))
        elif position == 0 and isinstance(node, ast.Expr) and isinstance(
                getattr(node, "value", None), ast.Constant) and isinstance(node.value.value, str):
            starts.append((0, "module docstring", None))
        elif not starts or starts[-1][2] is not None or starts[-1][1] == "module docstring":
            starts.append((first, "module", None))
        floor = node.end_lineno or floor
    if not starts:
        return None
    starts[0] = (0, *starts[0][1:])
    units: list[CodeSpan] = []
    for index, (line, section, node) in enumerate(starts):
        begin = offsets[min(line, len(offsets) - 1)]
        stop = (offsets[min(starts[index + 1][0], len(offsets) - 1)]
                if index + 1 < len(starts) else len(text))
        if isinstance(node, ast.ClassDef) and stop - begin > target:
            units.extend(_class_pieces(node, lines, offsets, begin, stop, target, section))
        elif stop > begin:
            units.append(CodeSpan(begin, stop, section))
    return units


def _class_pieces(node: ast.ClassDef, lines, offsets, begin: int, stop: int, target: int,
                  section: str) -> list[CodeSpan]:
    """A long class cut at its method boundaries, pieces packed up to the target."""
    cuts = []
    floor = node.lineno
    for child in node.body:
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
            first = min([child.lineno, *[d.lineno for d in child.decorator_list]]) - 1
            line = _comment_start(lines, first, floor)
            cut = offsets[min(line, len(offsets) - 1)]
            if begin < cut < stop:
                cuts.append((cut, child.name))
        floor = child.end_lineno or floor
    pieces: list[CodeSpan] = []
    piece_start, piece_name = begin, section
    for (cut, name), following in zip(cuts, [*cuts[1:], (stop, None)], strict=True):
        # Close the piece at this method boundary when adding the method would pass the target.
        if following[0] - piece_start > target and cut > piece_start:
            pieces.append(CodeSpan(piece_start, cut, piece_name))
            piece_start, piece_name = cut, f"{section}.{name}"
    pieces.append(CodeSpan(piece_start, stop, piece_name))
    return pieces


def _tree_sitter_units(text: str, language) -> list[CodeSpan] | None:
    import tree_sitter

    data = text.encode("utf-8")
    tree = tree_sitter.Parser(language).parse(data)
    root = tree.root_node
    if root.has_error:
        return None
    ascii_only = len(data) == len(text)

    def char(byte_offset: int) -> int:
        return byte_offset if ascii_only else len(data[:byte_offset].decode("utf-8", "ignore"))

    starts: list[tuple[int, str | None, bool]] = []  # (char offset of line start, section, is_def)
    pending_comment: int | None = None
    for child in root.children:
        line_start = text.rfind("\n", 0, char(child.start_byte)) + 1
        if "comment" in child.type:
            if pending_comment is None:
                pending_comment = line_start
            continue
        name_node = child.child_by_field_name("name")
        is_definition = name_node is not None or any(
            word in child.type for word in ("function", "class", "method", "impl", "struct",
                                            "interface", "enum", "trait", "type"))
        begin = pending_comment if pending_comment is not None else line_start
        pending_comment = None
        if is_definition:
            label = child.type.replace("_", " ")
            if name_node is not None:
                label = f"{label} {name_node.text.decode('utf-8', 'replace')}"
            starts.append((begin, label, True))
        elif not starts or starts[-1][2]:
            starts.append((begin, None, False))
    if not starts:
        return None
    starts[0] = (0, *starts[0][1:])
    units = []
    for index, (begin, section, _) in enumerate(starts):
        stop = starts[index + 1][0] if index + 1 < len(starts) else len(text)
        if stop > begin:
            units.append(CodeSpan(begin, stop, section))
    return units
