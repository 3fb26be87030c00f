"""The bundled demo corpus: the documentation that ships with the Python interpreter.

Every installation has it offline, so `make run` can index real text without a
download: the language reference topics of `pydoc_data.topics`, the docstrings
of the built-in functions and types, and those of the standard-library modules. Docstrings are read from the source
with `ast`, never by importing, because some modules act on import
(`antigravity` opens a browser, `this` prints).

Docstrings say what a function does, not how to do a task ("sort a dictionary by value"), so
where the machine also has Python's HTML documentation (Debian's `python3.X-doc`, or a folder
given with `--docs`), the Tutorial and the HOWTOs join the corpus, one document per section,
read by the indexer's HTML reader and titled by their heading path.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path

logger = logging.getLogger(__name__)

# Modules whose docstrings are empty, private or test scaffolding.
_SKIP_PREFIXES = ("_", "test", "idlelib", "lib2to3", "this", "antigravity", "__")
# Modules imported under another name on this platform: `os.path` is `posixpath` here.
MODULE_ALIASES = {os.path.__name__: "os.path"}
# Written first, then the built-ins: `make run` indexes the corpus in the background and
# commits it in growing chunks in file order, so the pages newcomers search for first are
# searchable within the first minute.
FIRST_MODULES = (
    "os", os.path.__name__, "io", "pathlib", "shutil", "glob", "json", "csv", "re", "string",
    "collections", "itertools", "functools", "datetime", "time", "subprocess", "sys", "logging",
    "argparse", "typing", "dataclasses", "abc", "codecs", "stat", "site", "math", "random",
)


def iter_topic_documents() -> Iterator[dict]:
    """One document per `pydoc_data.topics` entry (the language reference)."""
    from pydoc_data.topics import topics

    for name in sorted(topics):
        text = topics[name].strip()
        if text:
            yield {
                "id": f"topic:{name}",
                "title": f"Language reference: {name}",
                "text": text,
                "source": "pydoc_data.topics",
            }


def iter_builtin_documents() -> Iterator[dict]:
    """One document per built-in function or type (`open`, `print`, `str`, `dict`, ...).

    `builtins` is compiled in, so it has no source to parse; its objects are
    already loaded, so reading their docstrings has no side effects. A type's
    document lists its public methods' docstrings too (`str.split`, `dict.get`).
    """
    import builtins
    import inspect

    for name in sorted(dir(builtins)):
        if name.startswith("_"):
            continue
        obj = getattr(builtins, name)
        if not callable(obj):  # True, None, Ellipsis: their docstring is their type's
            continue
        doc = inspect.getdoc(obj)
        if not doc or (isinstance(obj, type) and issubclass(obj, BaseException)):
            continue
        sections = [doc.strip()]
        if isinstance(obj, type):
            kind = "type"
            for attr in sorted(vars(obj)):
                method_doc = None if attr.startswith("_") else inspect.getdoc(getattr(obj, attr))
                if method_doc and method_doc != doc:
                    sections.append(f"{name}.{attr}: {method_doc.strip()}")
        else:
            kind = "function"
        yield {
            "id": f"builtin:{name}",
            "title": f"Built-in {kind} {name}",
            "text": "\n\n".join(sections),
            "source": "builtins docstrings",
        }


def module_source_path(name: str) -> Path | None:
    """The `.py` file a standard-library module is built from, or None (a C extension).

    A frozen module (`os`, `io`, `posixpath`, `abc`, `codecs`, `stat`, `site` in 3.11+)
    has the spec origin "frozen"; its source file still ships, and the frozen
    importer names it in `loader_state.filename`.
    """
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    origin = spec.origin
    if origin == "frozen":
        origin = getattr(spec.loader_state, "filename", None)
    if not origin or not origin.endswith(".py"):
        return None
    return Path(origin)


def _module_source(name: str) -> str | None:
    path = module_source_path(name)
    if path is None:
        return None
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def module_document(name: str, source: str) -> dict | None:
    """Module docstring followed by the docstrings of its public classes and functions.

    A module people import under another name is titled by both ("Module os.path
    (posixpath)"), so a search for the name they write finds it.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    sections: list[str] = []
    module_doc = ast.get_docstring(tree)
    if module_doc:
        sections.append(module_doc.strip())
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        if node.name.startswith("_"):
            continue
        doc = ast.get_docstring(node)
        if doc and len(doc.split()) >= 5:
            kind = "class" if isinstance(node, ast.ClassDef) else "function"
            sections.append(f"{kind} {name}.{node.name}: {doc.strip()}")
    if not sections:
        return None
    alias = MODULE_ALIASES.get(name)
    return {
        "id": f"module:{name}",
        "title": f"Module {alias} ({name})" if alias else f"Module {name}",
        "text": "\n\n".join(sections),
        "source": "stdlib docstrings",
    }


def iter_module_documents() -> Iterator[dict]:
    """One document per standard-library module with documentation, `FIRST_MODULES` first."""
    rest = sorted(set(sys.stdlib_module_names) - set(FIRST_MODULES))
    for name in (*FIRST_MODULES, *rest):
        if name.startswith(_SKIP_PREFIXES):
            continue
        source = _module_source(name)
        if source is None:
            continue
        doc = module_document(name, source)
        if doc is not None:
            yield doc


_MIN_SECTION_CHARS = 80
# The guides that answer how-to questions, in this order.
GUIDES = (("tutorial", "Tutorial"), ("howto", "HOWTO"))


def default_docs_dir() -> Path | None:
    """Debian's HTML documentation of the running Python, when installed."""
    folder = Path(f"/usr/share/doc/python{sys.version_info.major}.{sys.version_info.minor}/html")
    return folder if (folder / "tutorial").is_dir() else None


def _sections(text: str, headings) -> Iterator[tuple[tuple[str, ...], str]]:
    """(heading path, text) of each section down to level 2 of a page's outline."""
    from indexer.sources.outline import Outline

    outline = Outline(headings=tuple(headings))
    cuts = [h.start for h in outline.headings if h.level <= 2] or [0]
    cuts = sorted({0, *cuts, len(text)})
    for start, end in zip(cuts, cuts[1:], strict=False):
        body = text[start:end].strip()
        if len(body) >= _MIN_SECTION_CHARS:  # not a chapter heading alone
            yield outline.section_at(start), body


def iter_guide_documents(docs_dir: Path | None) -> Iterator[dict]:
    """One document per section (down to level 2) of the Tutorial and HOWTO pages under
    `docs_dir`, titled "Tutorial: 5. Data Structures › 5.5. Dictionaries"; none without it."""
    if docs_dir is None:
        return
    from indexer.sources.formats import UnreadableDocument, decode_html, extract_html

    for folder, label in GUIDES:
        for page in sorted((docs_dir / folder).glob("*.html")):
            if page.name == "index.html":
                continue
            try:
                extracted = extract_html(decode_html(page.read_bytes()))
            except (OSError, UnreadableDocument) as err:
                logger.warning("skipped %s: %s", page, err)
                continue
            for number, (path, body) in enumerate(_sections(extracted.text, extracted.outline.headings)):
                title = " › ".join(path) or extracted.title
                yield {"id": f"{folder}:{page.stem}:{number}", "title": f"{label}: {title}", "text": body,
                       "source": f"{folder}/{page.name}"}


def build_demo_corpus(out_path: Path | str, docs_dir: Path | None = None) -> Path:
    """Write the demo corpus as JSON lines {id, title, text, source}; return the path.

    The common modules come first (see `FIRST_MODULES`), then the Tutorial and HOWTO sections
    (from `docs_dir`, when given), the built-ins, the rest of the standard library, and the
    language reference last.
    """
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_path.with_suffix(out_path.suffix + ".tmp")
    count = 0
    with tmp.open("w", encoding="utf-8") as fh:
        modules = list(iter_module_documents())
        first = len([d for d in modules if d["id"].removeprefix("module:") in FIRST_MODULES])
        for doc in (*modules[:first], *iter_guide_documents(docs_dir), *iter_builtin_documents(),
                    *modules[first:], *iter_topic_documents()):
            fh.write(json.dumps(doc, ensure_ascii=False) + "\n")
            count += 1
    tmp.replace(out_path)
    logger.info("wrote %d demo documents to %s", count, out_path)
    return out_path


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m data.demo_corpus",
        description="Write the demo corpus (Python's own documentation) as JSON lines.",
    )
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--docs", type=Path, default=None,
                        help="Python's HTML documentation, whose Tutorial and HOWTOs join the corpus "
                        "(default: Debian's python3.X-doc when installed; 'none' leaves them out)")
    args = parser.parse_args(argv)
    docs = None if str(args.docs) == "none" else args.docs or default_docs_dir()
    if docs is not None and not (docs / "tutorial").is_dir():
        parser.error(f"--docs {docs} holds no tutorial/ folder; pass the html folder of Python's documentation")
    path = build_demo_corpus(args.out, docs)
    print(f"demo corpus written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
