"""E-mail messages (`.eml`, a ticket or a mail saved from a client, an mbox folder or archive of
many): the message, not its transport.

Python's `email` package (policy `default`) parses the message: its Subject is the title,
encoded words decoded (`=?utf-8?q?Caf=C3=A9?=` reads "Café"); the text holds the sender,
recipients and date (what people search a mail by) and then the body, quoted-printable and base64
decoded in the charset each part declares. Of a multipart message the plain-text body is read,
else its HTML body for its text (`html_page.read_html`); attachments are not read, and are named
in a warning so that they can be saved and indexed as files of their own. The transport headers
(Received, DKIM, X-Spam-..., List-...) are left out: in a mailing-list message they outweigh the
body. An mbox file of several messages is split at its "From " lines (`mbox_messages`), each message
a document of its own.
"""

from __future__ import annotations

import codecs
import email
import email.policy
import re
from collections.abc import Iterable, Iterator
from email.message import EmailMessage
from typing import cast

from indexer.sources.formats.extracted import Extracted, UnreadableDocument, clean_text, reading
from indexer.sources.legacy_text import decode_legacy
from indexer.sources.outline import Outline

# A header field line (RFC 5322: printable ASCII but ":" and space, then ":").
_FIELD = re.compile(r"[!-9;-~]+:")
# Fields that say a text is a mail message (a plain text that opens with "From: " is not one).
_MAIL_FIELDS = frozenset({"date", "subject", "message-id", "received", "mime-version", "return-path",
                          "delivered-to", "in-reply-to", "content-type"})
_SHOWN = ("From", "To", "Cc", "Date")
# A signed message's signature part: proof of the sender, not content nor an attachment to save.
_SIGNATURES = frozenset({"application/pgp-signature", "application/pkcs7-signature",
                         "application/x-pkcs7-signature"})
_MAX_HEADER_LINES = 400
_HEAD_CHARS = 65536  # a header block longer than this is not a message's
_ESCAPED = re.compile("[\udc80-\udcff]")


def is_email(text: str) -> bool:
    """Whether a text is one mail message: it opens with a header block (an mbox "From " line
    allowed in it, first or after MH's `Replied:`/`Forwarded:` notes), every line of it a field
    or a field's continuation, holding From and at least two fields only mail has (Date,
    Subject, Message-ID, Received, MIME-Version, ...)."""
    lines = text[:_HEAD_CHARS].split("\n")
    names: set[str] = set()
    separator = False
    for line in lines[:_MAX_HEADER_LINES]:
        line = line.rstrip("\r")
        if not line:
            break
        if line.startswith("From ") and not separator:
            separator = True
            continue
        if line[0] in " \t" and names:
            continue
        field = _FIELD.match(line)
        if field is None:
            return False
        names.add(field.group()[:-1].lower())
    else:
        return False
    return "from" in names and len(names & _MAIL_FIELDS) >= 2


# A body line an mbox writer quoted so that it would not read as a separator. Only ">From " is
# undone, as the "mboxo" writers (Thunderbird, mutt, Python's `mailbox`) quote: they leave a line
# that already opened with ">From " as it was, and undoing ">>From " too (the "mboxrd" reading)
# took a ">" off 5 of 300 real messages written so (the SpamAssassin ham corpus, quoted replies).
_QUOTED_FROM = re.compile(r"^>(From )", re.MULTILINE)


def mbox_messages(lines: Iterable[str]) -> Iterator[tuple[int, str]]:
    """The messages of an mbox file, a mail archive or a client's folder, given line by line (each
    line without its "\\n"; the file's first line a "From " line): (the line number of each
    message's "From " line, the message without that line, its body's ">From " quoting undone).
    A message opens at a "From " line that follows an empty line and opens a header block; any
    other "From " line is body text. Lines are read as they come, so an archive of any size is
    split without being held whole."""
    start, current = 0, []  # the message being read: its "From " line's number, its lines
    pending: list[str] | None = None  # a "From " line and the header block after it, still to check
    previous_blank, number = True, 0
    for number, line in enumerate(lines, start=1):  # noqa: B007 -- the count is used after the loop
        if pending is not None:
            pending.append(line)
            if line.rstrip("\r") and len(pending) <= _MAX_HEADER_LINES + 1:
                continue
            if is_email("\n".join(pending)):  # a message begins: the one before it ends
                if start:
                    yield start, _message_text(current)
                start, current = number - len(pending) + 1, pending
            else:
                current += pending
            pending = None
        elif line.startswith("From ") and previous_blank:
            if start:
                pending = [line]
            else:
                start, current = number, [line]
        else:
            current.append(line)
        previous_blank = not line.rstrip("\r")
    if pending is not None:  # the file ends inside a header block: a message without a body
        if is_email("\n".join([*pending, ""])):
            yield start, _message_text(current)
            start, current = number - len(pending) + 1, pending
        else:
            current += pending
    if start:
        yield start, _message_text(current)


def _message_text(lines: list[str]) -> str:
    return _QUOTED_FROM.sub(r"\1", "\n".join(lines[1:]).rstrip("\r\n"))


def _undeclared_8bit(part: EmailMessage) -> str | None:
    """The text of a part that declares no charset (or US-ASCII, or one Python does not know) yet
    holds 8-bit bytes, as mail clients read it: UTF-8 when it decodes so, else the legacy encoding
    a text file would be read in (`legacy_text.decode_legacy`); None for a part that declares a
    known charset or is ASCII."""
    charset = part.get_content_charset() or "us-ascii"
    if charset != "us-ascii":
        try:
            codecs.lookup(charset)
            return None
        except LookupError:
            pass
    payload = part.get_payload(decode=True)
    if not isinstance(payload, bytes) or payload.isascii():
        return None
    try:
        return payload.decode("utf-8")
    except UnicodeDecodeError:
        legacy = decode_legacy(payload)
        return legacy[0] if legacy is not None else payload.decode("cp1252", errors="replace")


def _body_text(part: EmailMessage) -> str:
    content = _undeclared_8bit(part)
    if content is None:
        content = part.get_content()
    if not isinstance(content, str):
        return ""
    if part.get_content_type() == "text/html":
        from indexer.sources.formats.html_page import read_html

        try:
            return read_html(content).text
        except UnreadableDocument:
            return ""
    return content


def _printable(text: str) -> str:
    """`text` with each surrogate escape (a byte no declared charset explained: a part that
    declares none) as U+FFFD, as a mail client shows it."""
    return _ESCAPED.sub("\ufffd", text)


def _without_separator(text: str) -> str:
    """`text` without the mbox "From " line a saved message may keep in its header block: first,
    or after the notes MH adds (`Replied: ...`), where the parser would end the header at it."""
    lines = text.split("\n", _MAX_HEADER_LINES)
    for at, line in enumerate(lines[:_MAX_HEADER_LINES]):
        if not line.rstrip("\r"):
            break
        if line.startswith("From "):
            return "\n".join(lines[:at] + lines[at + 1:])
    return text


def read_email(text: str) -> Extracted:
    """The message's sender, recipients and date, then its body; the Subject as its title and
    attachments named in a warning. `text` is the message's bytes as ASCII with other bytes as
    surrogate escapes (how `email` parses bytes), or its text."""
    text = _without_separator(text)
    with reading("mail message", "save it again from the mail client", (LookupError, ValueError, KeyError)):
        message = cast(EmailMessage, email.message_from_string(text, policy=email.policy.default))
        header = "\n".join(f"{name}: {' '.join(str(message[name]).split())}" for name in _SHOWN
                           if message[name] is not None)
        body_part = message.get_body(preferencelist=("plain", "html"))
        body = _body_text(body_part) if isinstance(body_part, EmailMessage) else ""
        attachments = [part.get_filename() or part.get_content_type() for part in message.iter_attachments()
                       if part.get_content_type() not in _SIGNATURES]
        subject = " ".join(str(message["Subject"] or "").split())
    body = clean_text(body).strip()
    if not body and not attachments:
        raise UnreadableDocument("mail message without a body to index")
    warnings = ()
    if attachments:
        warnings = (f"{len(attachments)} attachment(s) not indexed: {', '.join(attachments[:5])}"
                    f"{' and more' if len(attachments) > 5 else ''}; save them as files to index them",)
    return Extracted(text=_printable(f"{header}\n\n{body}".strip()), outline=Outline(), title=_printable(subject),
                     warnings=warnings)
