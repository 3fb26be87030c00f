"""Links from a hit to its document: a download of the local file, and a PDF opened at the page.

A whole-file document (a PDF, a Word file, a page, a text file) was read from a file on this
machine (`Hit.path`); a record of a .jsonl or .csv has no file of its own, so it gets no link. A
message of an mbox folder is downloaded alone, as a saved message (`.eml`) a mail client opens.
The download is deferred: the file is read only when the button is pressed. A PDF hit with a
page also gets an "Open at p. N" button; once pressed, the hit shows a link that opens the file
in the browser's viewer at that page (`#page=N`, which Chromium's and Firefox's viewers follow),
served by Streamlit's own media store while the hit is on the page. Only a PDF asked for is
read and held, never every PDF a page of hits shows: rendering the hits stays free of file reads.
"""

from __future__ import annotations

import mimetypes
from pathlib import Path

import streamlit as st
from streamlit import runtime

from indexer.sources.readers import content_name, mbox_message, mbox_message_line, opens_as_mbox
from search import Hit
from ui.highlight import escape_name

# Streamlit holds a served file in memory while its hit is shown; the upload limit bounds it.
MAX_SERVED_BYTES = 50 * 1024 * 1024
# The hits (by key) whose PDF the user asked to open, this session.
OPENED = "opened_pdfs"


def local_file(hit: Hit) -> Path | None:
    """The file a whole-file document was read from, when it is still there; else None."""
    if not hit.path or hit.doc_id != hit.source:
        return None
    path = Path(hit.path)
    return path if path.is_file() else None


def mbox_message_file(hit: Hit) -> tuple[Path, int] | None:
    """The mbox file and the line of a message's "From " line, for a hit on an mbox message whose
    file is still there; else None. A record named by its line (`FILE#L<line>`) of a JSON export
    saved without `.json` is told apart by its file's first five bytes, which only such a hit reads."""
    line = mbox_message_line(hit.doc_id, hit.source) if hit.path else None
    if line is None:
        return None
    path = Path(hit.path)
    return (path, line) if opens_as_mbox(path) else None


def pdf_page_url(path: Path, page: int, key: str) -> str | None:
    """A URL that opens the PDF at `path` at `page` in the browser's viewer; None when it cannot be
    served (too large, unreadable, or no Streamlit runtime)."""
    try:
        if path.stat().st_size > MAX_SERVED_BYTES or not runtime.exists():
            return None
        url = runtime.get_instance().media_file_mgr.add(str(path), "application/pdf", key)
    except OSError:
        return None
    return f"{url}#page={page}"


def _is_pdf(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            return fh.read(5) == b"%PDF-"
    except OSError:
        return False


def _reader(path: Path):
    def read() -> bytes:
        return path.read_bytes()
    return read


def message_reader(path: Path, line: int):
    """The deferred read of one mbox message: its bytes, or an error naming the fix when the file no
    longer holds it."""
    def read() -> bytes:
        message = mbox_message(path, line)
        if message is None:  # Streamlit logs it and tells the person the download failed
            raise FileNotFoundError(f"{path} holds no message at line {line:,} any more: it changed since it "
                                    "was indexed; build the index again to find its messages")
        return message
    return read


def show_message_link(path: Path, line: int, key: str) -> None:
    """The download of one mbox message, read from its folder only when the button is pressed."""
    name = f"{content_name(path)}-L{line}.eml"
    st.download_button(f"Download the message (line {line:,} of {path.name})", data=message_reader(path, line),
                       file_name=name, mime="message/rfc822", key=f"download-{key}", icon=":material/mail:",
                       on_click="ignore")


def show_document_links(hit: Hit, key: str) -> None:
    """The download button (of the file, or of an mbox message alone) and, for a PDF hit on a known
    page, the link to open it there."""
    message = mbox_message_file(hit)
    if message is not None:
        show_message_link(*message, key)
        return
    path = local_file(hit)
    if path is None:
        return
    columns = st.columns([1, 1])
    mime = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    columns[0].download_button(f"Download {path.name}", data=_reader(path), file_name=path.name, mime=mime,
                               key=f"download-{key}", icon=":material/download:", on_click="ignore")
    page = hit.location.page_first
    if page is None or not _is_pdf(path):
        return
    opened: set[str] = st.session_state.setdefault(OPENED, set())
    if key not in opened:
        columns[1].button(f"Open at p. {page}", key=f"open-{key}", icon=":material/picture_as_pdf:",
                          on_click=opened.add, args=(key,))
        return
    url = pdf_page_url(path, page, f"pdf-{key}")
    if url is None:
        columns[1].caption(f"{escape_name(path.name)} is over {MAX_SERVED_BYTES // 2**20} MB to open here; "
                           "download it instead.")
    else:
        columns[1].markdown(f"[Open {escape_name(path.name)} at p. {page} ↗]({url})")
