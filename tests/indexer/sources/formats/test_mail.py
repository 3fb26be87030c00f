"""Mail messages written by the standard library's `email` package, as mail clients save them:
encoded subjects, quoted-printable and base64 bodies, HTML alternatives, attachments, signatures."""

from __future__ import annotations

from email.message import EmailMessage

import pytest

from indexer.sources.formats import UnreadableDocument, is_email
from indexer.sources.formats.mail import read_email


def message(body: str = "The printer on floor 3 jams on every duplex job.", subtype: str = "plain",
            cte: str | None = "quoted-printable") -> EmailMessage:
    mail = EmailMessage()
    mail["From"] = "Zoë Adams <zoe@example.org>"
    mail["To"] = "helpdesk@example.org"
    mail["Date"] = "Tue, 03 Nov 2026 09:14:00 +0100"
    mail["Subject"] = "Ticket #4711: imprimante bloquée"
    mail["Message-ID"] = "<4711@example.org>"
    mail["Received"] = "from mx.example.org by mail.example.org; Tue, 03 Nov 2026 09:14:01 +0100"
    mail.set_content(body, subtype=subtype, cte=cte)
    return mail


def test_the_subject_titles_it_and_sender_date_and_decoded_body_make_its_text():
    raw = message("Le pilote réinstallé, l'imprimante bloque encore. " * 3).as_string()
    assert "=C3=A9" in raw and "=?utf-8?" in raw  # quoted-printable body, encoded-word subject
    assert is_email(raw)
    extracted = read_email(raw)
    assert extracted.title == "Ticket #4711: imprimante bloquée"
    assert extracted.text.startswith("From: Zoë Adams <zoe@example.org>\nTo: helpdesk@example.org\n"
                                     "Date: Tue, 03 Nov 2026 09:14:00 +0100\n\nLe pilote réinstallé")
    assert "Received" not in extracted.text and "Message-ID" not in extracted.text
    assert not extracted.warnings


def test_base64_and_an_html_only_body_are_read_as_text():
    assert "réinstallé" in read_email(message("Pilote réinstallé.", cte="base64").as_string()).text
    html = message("<html><body><h1>Status</h1><p>The <b>duplex unit</b> was replaced.</p></body></html>",
                   subtype="html")
    text = read_email(html.as_string()).text
    assert "The duplex unit was replaced." in text and "<b>" not in text


def test_the_plain_alternative_is_preferred_and_attachments_named_but_not_signatures():
    mail = message()
    mail.add_alternative("<p>HTML twin of the body</p>", subtype="html")
    mail.add_attachment(b"%PDF-1.4 ...", maintype="application", subtype="pdf", filename="invoice.pdf")
    mail.add_attachment(b"-----BEGIN PGP SIGNATURE-----", maintype="application", subtype="pgp-signature")
    extracted = read_email(mail.as_string())
    assert "duplex job" in extracted.text and "HTML twin" not in extracted.text
    assert extracted.warnings == ("1 attachment(s) not indexed: invoice.pdf; save them as files to index them",)


def test_a_body_without_a_declared_charset_is_read_as_a_mail_client_would():
    raw = message("Gr\N{LATIN SMALL LETTER U WITH DIAERESIS}\N{LATIN SMALL LETTER SHARP S}e aus K\N{LATIN SMALL LETTER O WITH DIAERESIS}ln, die Kaffeemaschine ist kaputt.",
                  cte="8bit").as_bytes()
    raw = raw.replace(b'; charset="utf-8"', b"").replace("Grüße aus Köln".encode(), "Grüße aus Köln".encode("cp1252"))
    assert b"charset" not in raw.split(b"\n\n", 1)[0].split(b"Content-Type")[1].split(b"\n")[0]
    text = read_email(raw.decode("ascii", errors="surrogateescape")).text
    assert "Grüße aus Köln, die Kaffeemaschine ist kaputt." in text and "\ufffd" not in text


@pytest.mark.parametrize("text", [
    "From: Alice\nShe wrote the first draft.\n",  # a note that opens with "From:"
    "Subject: minutes\nDate: Monday\n\nNo sender.",  # no From
    "From: a@example.org\nTo: b@example.org\n\nOnly address fields.",  # nothing only mail has
    "From: a@example.org\nDate: today\nSubject: never ends",  # no blank line ends the header
])
def test_text_that_only_looks_like_a_header_is_not_mail(text):
    assert not is_email(text)


def test_a_message_without_a_body_or_attachment():
    with pytest.raises(UnreadableDocument, match="mail message without a body"):
        read_email(message("   ").as_string())


def test_an_unknown_charset_is_read_as_an_undeclared_one():
    raw = message("Caf\N{LATIN SMALL LETTER E WITH ACUTE} ferm\N{LATIN SMALL LETTER E WITH ACUTE}.", cte="8bit").as_bytes()
    raw = raw.replace(b'charset="utf-8"', b'charset="x-mac-unknown"')
    assert read_email(raw.decode("ascii", errors="surrogateescape")).text.endswith("Café fermé.")


def mbox_of(path, messages: list[EmailMessage]) -> None:
    """An mbox file as Python's `mailbox` writes one (each message after a "From " line, body lines
    that open with "From " quoted as ">From ")."""
    import mailbox

    box = mailbox.mbox(str(path))
    for mail in messages:
        box.add(mail)
    box.flush()
    box.close()


def split_mbox(text: str) -> list[tuple[int, str]]:
    """The messages `mbox_messages` finds in a whole text, each (line of its "From " line, text)."""
    from indexer.sources.formats.mail import mbox_messages

    return list(mbox_messages(text.split("\n")))


def test_an_mbox_is_split_at_its_from_lines_with_its_quoting_undone(tmp_path):
    second = message("Fixed.\n\nFrom now on the printer is fine.\n")
    del second["Subject"]
    second["Subject"] = "Re: the printer"
    mbox_of(tmp_path / "box", [message(), second, message("Third one.")])
    text = (tmp_path / "box").read_text(encoding="utf-8")
    assert "\n>From now on" in text, "mailbox quotes a body line that opens with From"
    parts = split_mbox(text)
    assert len(parts) == 3
    lines = text.split("\n")
    assert [lines[line - 1].startswith("From ") for line, _ in parts] == [True] * 3 and parts[0][0] == 1
    assert [read_email(body).title for _, body in parts] == ["Ticket #4711: imprimante bloquée", "Re: the printer",
                                                              "Ticket #4711: imprimante bloquée"]
    assert read_email(parts[1][1]).text.endswith("Fixed.\n\nFrom now on the printer is fine.")
    assert read_email(parts[2][1]).text.endswith("Third one.")


def test_a_single_message_or_a_body_line_that_opens_with_from_is_not_an_mbox(tmp_path):
    mbox_of(tmp_path / "one", [message()])
    assert [line for line, _ in split_mbox((tmp_path / "one").read_text(encoding="utf-8"))] == [1]
    # A "From " line after an empty line that opens no header block is body text, quoted or not.
    unquoted = "From a@b Tue Nov  3 09:14:00 2026\n" + message("Hello.\n\nFrom the top: again.\n").as_string()
    assert [line for line, _ in split_mbox(unquoted)] == [1]
    assert split_mbox(unquoted)[0][1].endswith("From the top: again.")
    assert split_mbox(message().as_string()) == []  # no "From " line at all: no message of an mbox


def test_an_mbox_that_ends_inside_a_header_block_keeps_its_last_message():
    last = "From b@c Wed Nov  4 10:00:00 2026\nFrom: b@c\nSubject: cut short\nDate: Wed, 04 Nov 2026 10:00:00 +0000"
    text = "From a@b Tue Nov  3 09:14:00 2026\n" + message("First.").as_string() + "\n" + last
    parts = split_mbox(text)
    assert [line for line, _ in parts] == [1, text.split("\n").index(last.split("\n")[0]) + 1]
    assert parts[1][1] == last.split("\n", 1)[1]


def test_a_message_with_mh_notes_before_its_from_line_is_read_as_mail():
    """MH notes a reply or a forward above the mbox "From " line it keeps (18 of the SpamAssassin
    corpus' 2,403 ham messages): those were read as plain text, transport headers and all."""
    raw = ("Replied: Thu, 29 Aug 2002 11:24:44 +0100\nReplied: fork@example.com\n"
           "From fork-admin@xent.com  Thu Aug 29 11:03:53 2002\n" + message("The alliance is fading.").as_string())
    assert is_email(raw)
    extracted = read_email(raw)
    assert extracted.title == "Ticket #4711: imprimante bloquée" and extracted.text.endswith("The alliance is fading.")
    assert "Replied" not in extracted.text and "fork-admin" not in extracted.text
    assert not is_email("Note: two\nFrom here on, text.\nFrom: me\n\nbody")  # no mail field beside From
