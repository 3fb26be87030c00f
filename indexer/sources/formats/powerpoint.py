"""PowerPoint (.pptx): each slide one page, its title a heading, its speaker notes after its text.

python-pptx reads the slides in presentation order and each slide's shapes in the order the
slide stacks them: text boxes and placeholders paragraph by paragraph, table rows as their cells
joined by " | ", grouped shapes as the shapes they group. Charts and pictures hold no text to
read. Slide numbers are the pages a passage is located by (`p. 7` is slide 7).
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pptx
from pptx.exc import PackageNotFoundError
from pptx.shapes.base import BaseShape

from indexer.sources.formats.extracted import Extracted, UnreadableDocument, clean_text, reading
from indexer.sources.outline import Block, assemble

_FIX = "open and save it again in PowerPoint or LibreOffice"


def _shape_texts(shapes: Iterable[BaseShape], skip: BaseShape | None) -> Iterator[str]:
    """The text of each paragraph and table row of `shapes` in stacking order, groups opened;
    `skip` (the title, read first) left out."""
    for shape in shapes:
        if skip is not None and shape.shape_id == skip.shape_id:
            continue
        if getattr(shape, "shapes", None) is not None:  # a group shape
            yield from _shape_texts(shape.shapes, skip)  # type: ignore[attr-defined]
        elif getattr(shape, "has_table", False):
            for row in shape.table.rows:  # type: ignore[attr-defined]
                cells = (" ".join(cell.text.split()) for cell in row.cells)
                yield " | ".join(cell for cell in cells if cell)
        elif shape.has_text_frame:
            yield from (paragraph.text for paragraph in shape.text_frame.paragraphs)  # type: ignore[attr-defined]


def _slide_blocks(slide: Any, number: int) -> Iterator[Block]:
    title = slide.shapes.title
    if title is not None and title.has_text_frame and title.text_frame.text.strip():
        yield Block(clean_text(" ".join(title.text_frame.text.split())), level=1, page=number)
    for text in _shape_texts(slide.shapes, title):
        yield Block(clean_text(text), page=number)
    if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
        yield Block(clean_text(slide.notes_slide.notes_text_frame.text), page=number)


def read_pptx(path: Path) -> Extracted:
    """The slides' text, one page a slide, each slide's title a heading; the title from the
    file's properties, else its first slide title."""
    with reading("PowerPoint file", _FIX, (PackageNotFoundError, zipfile.BadZipFile, KeyError, ValueError)):
        presentation = pptx.Presentation(str(path))
        blocks = [block for number, slide in enumerate(presentation.slides, 1)
                  for block in _slide_blocks(slide, number)]
    text, outline = assemble(blocks)
    if not text.strip():
        raise UnreadableDocument("PowerPoint file without text (only pictures, or empty slides); nothing to index")
    title = " ".join((presentation.core_properties.title or "").split())
    title = title or (outline.headings[0].title if outline.headings else "")
    return Extracted(text=text, outline=outline, title=title)
