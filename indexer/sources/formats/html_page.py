"""HTML: the page's main content, boilerplate removed, headings (h1–h6) kept as the outline.

`read_html` (saved web pages, HTML documentation) finds the main content in one of two ways:
- a page that marks it (`<main>`, `role="main"`, or a single `<article>`, as HTML5 pages and
  documentation generators such as Sphinx and MkDocs do) is read inside that element, less any
  navigation, header, footer, sidebar or form within it, every heading kept;
- any other page goes to trafilatura, whose heuristics are built to drop navigation, footers,
  sidebars, cookie banners and share buttons from unmarked markup; it keeps headings, lists,
  tables and code. When it finds nothing, the whole body is read, less page furniture.
Chosen by measurement (BENCHMARKS.md, "Documents: choosing the readers"): on the Python
documentation the marked-main reading keeps every heading at its level and every code block,
with trafilatura's word recall and far faster, while trafilatura's own output lost headings (and
flattened a short page's headings into one paragraph); markitdown kept the sidebar navigation.

`html_blocks` reads every element of a fragment in order: an e-book's chapters, which have no
boilerplate to drop.
"""

from __future__ import annotations

from collections.abc import Iterator

import lxml.etree as etree
import lxml.html
import trafilatura

from indexer.sources.formats.extracted import Extracted, UnreadableDocument, clean_text
from indexer.sources.outline import Block, assemble

_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_BLOCKS = frozenset({
    "p", "div", "section", "article", "main", "li", "ul", "ol", "dl", "dt", "dd", "pre", "blockquote",
    "table", "tr", "caption", "figcaption", "figure", "header", "footer", "aside", "nav", "br", "hr",
    "address", "details", "summary", "body", "td", "th",
})
_NEVER_TEXT = frozenset({"script", "style", "noscript", "template", "svg", "math", "head", "iframe", "object",
                         "button", "select", "textarea", "input"})
_FURNITURE = frozenset({"nav", "header", "footer", "aside", "form"})
_FURNITURE_ROLES = frozenset({"navigation", "banner", "contentinfo", "search", "complementary"})
# Sphinx and MkDocs end each heading with a permalink sign.
_PERMALINKS = "¶\u00b6#🔗"


def _heading_text(text: str) -> str:
    return " ".join(text.split()).rstrip(_PERMALINKS).strip()


def _preformatted(text: str) -> str:
    """A `<pre>` block's text as it is laid out: its lines kept (a doctest's `>>>` prompts and
    their output on lines of their own, as the app shows them), trailing spaces and the empty
    lines around the block dropped."""
    lines = [line.rstrip() for line in text.replace("\t", "    ").splitlines()]
    return "\n".join(lines).strip("\n")


def html_blocks(root: etree._Element, drop_furniture: bool = False) -> Iterator[Block]:
    """The text of `root` as blocks in document order: one per heading, one per run of text between
    block-level tags, its spaces and line breaks collapsed, except in a `<pre>` block, which keeps
    its lines. Scripts and styles are skipped; with `drop_furniture`, so are navigation, page
    headers and footers, sidebars and forms (by tag and ARIA role)."""
    buffer: list[str] = []
    in_pre = 0  # how many <pre> elements the walk is inside

    def flush(level: int | None = None) -> Iterator[Block]:
        text = "".join(buffer)
        buffer.clear()
        text = _heading_text(text) if level is not None else \
            _preformatted(text) if in_pre else " ".join(text.split())
        if text:
            yield Block(clean_text(text), level=level)

    walker = etree.iterwalk(root, events=("start", "end"))
    for event, element in walker:
        tag = element.tag.split("}")[-1].lower() if isinstance(element.tag, str) else ""
        if event == "start":
            if not tag or tag in _NEVER_TEXT or (drop_furniture and (
                    tag in _FURNITURE or (element.get("role") or "").lower() in _FURNITURE_ROLES)):
                walker.skip_subtree()
                if isinstance(element.tag, str) and element.tail:
                    buffer.append(element.tail)
                continue
            if (tag in _HEADINGS or tag in _BLOCKS) and not (in_pre and tag != "pre"):
                yield from flush()
            in_pre += tag == "pre"
            if element.text:
                buffer.append(element.text)
            continue
        if tag in _HEADINGS:
            yield from flush(_HEADINGS[tag])
        elif tag == "pre":
            yield from flush()
            in_pre -= 1
        elif tag == "br" and in_pre:
            buffer.append("\n")
        elif tag in _BLOCKS and not in_pre:
            yield from flush()
        if element.tail and element is not root:
            buffer.append(element.tail)
    yield from flush()


def _trafilatura_blocks(body: etree._Element) -> Iterator[Block]:
    """trafilatura's main content (its own tags: head, p, list/item, table/row/cell, code, quote)
    as blocks."""
    for element in body:
        tag = element.tag if isinstance(element.tag, str) else ""
        if tag == "head":
            rend = element.get("rend") or "h2"
            level = int(rend[1]) if len(rend) == 2 and rend[1].isdigit() else 2
            yield Block(clean_text(_heading_text("".join(element.itertext()))), level=level)
        elif tag == "list":
            for item in element.iter("item"):
                yield Block(clean_text(" ".join("".join(item.itertext()).split())))
        elif tag == "table":
            for row in element.iter("row"):
                cells = [" ".join("".join(cell.itertext()).split()) for cell in row.iter("cell")]
                yield Block(clean_text(" | ".join(c for c in cells if c)))
        elif tag == "code":
            yield Block(clean_text("".join(element.itertext())))
        else:
            yield Block(clean_text(" ".join("".join(element.itertext()).split())))


def _parse(html: str) -> etree._Element | None:
    try:
        return lxml.html.document_fromstring(html)
    except (etree.ParserError, ValueError):
        return None


def _title(root: etree._Element | None, found: str | None) -> str:
    if found:
        return _heading_text(found)
    if root is None:
        return ""
    for path in ("//title", "//h1"):
        nodes = root.xpath(path)
        if nodes:
            text = _heading_text(nodes[0].text_content())
            if text:
                return text
    return ""


def marked_main(root: etree._Element) -> etree._Element | None:
    """The element a page marks as its main content: `<main>`, `role="main"`, or its only `<article>`."""
    for path in ("//main", "//*[@role='main']"):
        found = root.xpath(path)
        if found:
            return found[0]
    articles = root.xpath("//article")
    return articles[0] if len(articles) == 1 else None


def _unmarked_blocks(html: str, root: etree._Element | None) -> tuple[list[Block], str | None]:
    """trafilatura's reading of a page without marked main content, and the title it found."""
    extracted = trafilatura.bare_extraction(html, include_tables=True, include_formatting=False,
                                            include_comments=False, include_images=False,
                                            favor_recall=True, with_metadata=True, output_format="python")
    blocks: list[Block] = []
    if extracted is not None and extracted.body is not None:
        blocks = list(_trafilatura_blocks(extracted.body))
    if not any(b.text.strip() for b in blocks) and root is not None:
        body = root.find("body")
        blocks = list(html_blocks(body if body is not None else root, drop_furniture=True))
    return blocks, getattr(extracted, "title", None) if extracted is not None else None


def read_html(html: str) -> Extracted:
    """A page's main content, its headings in the outline, and its title (its <title>, or the
    first h1)."""
    html = html.lstrip("\ufeff")
    root = _parse(html)
    main = marked_main(root) if root is not None else None
    found_title = None
    if main is not None:
        blocks = list(html_blocks(main, drop_furniture=True))
    else:
        blocks, found_title = _unmarked_blocks(html, root)
    text, outline = assemble(blocks)
    if not text.strip():
        raise UnreadableDocument("HTML page without text (only markup, scripts or images); nothing to index")
    return Extracted(text=text, outline=outline, title=_title(root, found_title))
