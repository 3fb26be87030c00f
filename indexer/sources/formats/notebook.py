"""Jupyter notebooks (`.ipynb`): the cells as Markdown, headings from the Markdown cells.

A notebook is JSON (nbformat 4: `cells`; nbformat 3: `worksheets[].cells`, code in `input`). Read
as plain text, its passages held JSON quoting (`"source": ["## Results\\n", ...`), escaped line
breaks and the base64 of every plotted figure. Here each cell becomes what it says: a Markdown
cell as it is written, a code cell as a fenced block in the notebook's language, a raw cell as
its text; of the outputs, what is text (what was printed to stdout, a result's `text/plain`)
follows its cell, and figures (with their `<Figure size 640x480 with 1 Axes>`), HTML, stderr
(warnings, progress bars) and tracebacks are left out (an error's traceback is terminal codes
around the code already indexed). The outline is the Markdown cells' headings; the title the
notebook's own (`metadata.title`), else its first heading.

The standard library's `json` reads it: `nbformat` would validate the schema and hand back the
same dictionaries, for four more packages (jsonschema, fastjsonschema, traitlets, jupyter_core);
a notebook that is JSON but not a notebook is refused by name here, not by a schema.
"""

from __future__ import annotations

import json
from typing import Any

from indexer.sources.formats.extracted import Extracted, UnreadableDocument, clean_text
from indexer.sources.outline import markdown_outline

NOTEBOOK_SUFFIX = ".ipynb"
_FIX = "open and save it again in Jupyter, or export it as Markdown (File > Save and Export As)"


def is_notebook(name: str, text: str) -> bool:
    """Whether a text file is a Jupyter notebook: named `.ipynb`, or a JSON object that opens
    with its `cells` and names its `nbformat` (a notebook saved under another name)."""
    if name.lower().endswith(NOTEBOOK_SUFFIX):
        return True
    head = text[:4096].lstrip()
    return head.startswith("{") and '"cells"' in head and '"nbformat"' in text


def _text(value: Any) -> str:
    """A cell's source or an output's text: a string, or a list of lines as nbformat writes it."""
    if isinstance(value, list):
        return "".join(part for part in value if isinstance(part, str))
    return value if isinstance(value, str) else ""


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _outputs(cell: dict[str, Any]) -> list[str]:
    texts: list[str] = []
    for output in cell.get("outputs") or ():
        if not isinstance(output, dict):
            continue
        kind = output.get("output_type")
        if kind == "stream":
            if output.get("name", output.get("stream")) != "stderr":  # warnings and progress bars
                texts.append(_text(output.get("text")))
        elif kind in ("execute_result", "display_data", "pyout"):
            data = _dict(output.get("data")) or output
            if not any(str(key).startswith("image/") or key in ("png", "jpeg", "svg") for key in data):
                texts.append(_text(data.get("text/plain", data.get("text"))))  # a figure's is its repr
    return [text.strip("\n") for text in texts if text.strip()]


def _fence(code: str) -> str:
    """A fence that the code itself does not close."""
    fence = "```"
    while fence in code:
        fence += "`"
    return fence


def _cells(notebook: dict[str, Any]) -> list[dict[str, Any]]:
    cells = notebook.get("cells")
    if cells is None:  # nbformat 3
        cells = [cell for sheet in notebook.get("worksheets") or () if isinstance(sheet, dict)
                 for cell in sheet.get("cells") or ()]
    if not isinstance(cells, list):
        raise UnreadableDocument(f"a JSON file whose 'cells' is not a list: not a Jupyter notebook; {_FIX}")
    return [cell for cell in cells if isinstance(cell, dict)]


def read_notebook(text: str) -> Extracted:
    """The notebook in `text` as Markdown; raises `UnreadableDocument` for damaged JSON or JSON
    that is not a notebook, and for a notebook without text."""
    try:
        notebook = json.loads(text)
    except json.JSONDecodeError as err:
        raise UnreadableDocument(f"damaged Jupyter notebook (not valid JSON: {err}); {_FIX}") from err
    if not isinstance(notebook, dict) or not ("cells" in notebook or "worksheets" in notebook):
        raise UnreadableDocument(f"JSON without cells: not a Jupyter notebook; {_FIX}")
    metadata = _dict(notebook.get("metadata"))
    language = str(_dict(metadata.get("language_info")).get("name")
                   or _dict(metadata.get("kernelspec")).get("language") or "")
    blocks: list[str] = []
    for cell in _cells(notebook):
        kind = cell.get("cell_type")
        source = _text(cell.get("source", cell.get("input"))).strip("\n")
        if kind == "code":
            if source.strip():
                fence = _fence(source)
                blocks.append(f"{fence}{language}\n{source}\n{fence}")
            blocks.extend(_outputs(cell))
        elif kind == "heading":  # nbformat 3's heading cells
            blocks.append(f"{'#' * int(cell.get('level') or 1)} {source}")
        elif source.strip():
            blocks.append(source)
    markdown = clean_text("\n\n".join(blocks)).strip()
    if not markdown:
        raise UnreadableDocument("a Jupyter notebook without text: every cell is empty")
    outline = markdown_outline(markdown)
    title = metadata["title"] if isinstance(metadata.get("title"), str) else ""
    heading = outline.headings[0].title if outline.headings else ""
    return Extracted(text=markdown, outline=outline, title=title or heading)
