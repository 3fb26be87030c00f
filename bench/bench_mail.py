"""Mail on real messages: how fast and how cleanly the indexer reads saved messages and mbox
folders, beside Python's own `mailbox` and `email` on the same messages.

The corpus is the SpamAssassin public corpus' "ham" messages (2002: mailing lists and personal
mail, many charsets, multipart, attachments), as Debian ships them in
golang-github-gatherstars-com-jwz-dev (fetched once with `apt-get download` into `.cache/mail`,
unpacked with `dpkg -x`; nothing installed). Each message is read twice: as the `.eml` files the
package holds, and as one mbox file that Python's `mailbox` writes from them (as a mail client or
an archiver keeps a folder).

Ours is `read_documents` over a folder holding them (the indexer's reading, with every check);
it counts documents, warnings (attachments named), "not UTF-8" warnings and replacement
characters, and for the mbox how many messages read exactly as their `.eml` file does. The peer is
the standard library's plain way: `email` (policy default) for each `.eml`, `mailbox.mbox` for the
mbox, each message's `get_body(("plain", "html")).get_content()`; it counts the messages it got a
body from and the replacement characters in them.

    python bench/bench_mail.py [--cache .cache/mail] [--no-record]
"""

from __future__ import annotations

import argparse
import email
import email.policy
import mailbox
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench.record import markdown_table, record
from data.paths import PROJECT_ROOT
from indexer.sources.documents import InputIssue
from indexer.sources.readers import read_documents

PACKAGE = "golang-github-gatherstars-com-jwz-dev"
HAM = "usr/share/gocode/src/github.com/gatherstars-com/jwz/test/testdata/ham"


def fetch(cache: Path) -> Path:
    """The ham messages' folder, the package fetched and unpacked under `cache` once."""
    folder = cache / "root" / HAM
    if not folder.is_dir():
        cache.mkdir(parents=True, exist_ok=True)
        subprocess.run(["apt-get", "download", PACKAGE], cwd=cache, check=True, capture_output=True)
        deb = next(cache.glob(f"{PACKAGE}_*.deb"))
        subprocess.run(["dpkg", "-x", str(deb), str(cache / "root")], check=True)
    return folder


def write_mbox(messages: list[Path], path: Path) -> Path:
    """One mbox of `messages`, as Python's `mailbox` writes it."""
    box = mailbox.mbox(str(path))
    for message in messages:
        box.add(mailbox.mboxMessage(message.read_bytes()))
    box.flush()
    box.close()
    return path


@dataclass(frozen=True)
class Reading:
    """What one reader made of the messages."""

    documents: int  # documents (ours) or messages with a body (the peer)
    seconds: float
    warnings: int = 0
    not_utf8: int = 0
    replaced: int = 0  # U+FFFD in the texts
    texts: tuple[str, ...] = ()


def ours(folder: Path) -> Reading:
    issues: list[InputIssue] = []
    started = time.perf_counter()
    docs = list(read_documents(folder, issues.append))
    seconds = time.perf_counter() - started
    return Reading(len(docs), seconds, len(issues), sum("not UTF-8" in i.problem for i in issues),
                   sum(d.text.count("\ufffd") for d in docs), tuple(d.text for d in docs))


def _body(message: email.message.EmailMessage) -> str | None:
    try:
        part = message.get_body(preferencelist=("plain", "html"))
        content = part.get_content() if part is not None else None
    except (LookupError, ValueError, KeyError, AttributeError):
        return None
    return content if isinstance(content, str) and content.strip() else None


def peer_eml(files: list[Path]) -> Reading:
    started = time.perf_counter()
    bodies = [_body(email.message_from_bytes(path.read_bytes(), policy=email.policy.default)) for path in files]
    return _peer(bodies, time.perf_counter() - started)


def peer_mbox(path: Path) -> Reading:
    started = time.perf_counter()
    box = mailbox.mbox(str(path))
    bodies = [_body(email.message_from_bytes(box.get_bytes(key), policy=email.policy.default)) for key in box.iterkeys()]
    box.close()
    return _peer(bodies, time.perf_counter() - started)


def _peer(bodies: list[str | None], seconds: float) -> Reading:
    found = [b for b in bodies if b is not None]
    return Reading(len(found), seconds, replaced=sum(b.count("\ufffd") for b in found))


def measure(files: list[Path], work: Path) -> dict[str, tuple[Reading, Reading]]:
    """(ours, the peer) for the messages as `.eml` files and as one mbox."""
    eml, box = work / "eml", work / "mbox"
    eml.mkdir()
    box.mkdir()
    for path in files:  # copied: a folder's links to files outside it are not followed
        (eml / path.name).write_bytes(path.read_bytes())
    mbox_path = write_mbox(files, box / "ham.mbox")
    return {"eml": (ours(eml), peer_eml(files)), "mbox": (ours(box), peer_mbox(mbox_path))}


def table(results: dict[str, tuple[Reading, Reading]], messages: int) -> str:
    eml_texts = results["eml"][0].texts
    rows = []
    for kind, label in (("eml", f"{messages:,} `.eml` files"), ("mbox", "the same in one mbox")):
        mine, peer = results[kind]
        same = (f"{sum(a == b for a, b in zip(mine.texts, eml_texts, strict=False)):,}"
                if kind == "mbox" and len(mine.texts) == len(eml_texts) else "–")
        rows.append([label, "ours (`read_documents`)", f"{mine.documents:,}", f"{messages / mine.seconds:,.0f}",
                     mine.warnings, mine.not_utf8, mine.replaced, same])
        rows.append([label, "peer (`mailbox`, `email`)", f"{peer.documents:,}", f"{messages / peer.seconds:,.0f}",
                     "–", "–", peer.replaced, "–"])
    header = ["input", "reader", "documents (ours) / bodies (peer)", "messages/s", "warnings", "not UTF-8 warnings",
              "U+FFFD in the texts", "texts equal to the .eml's"]
    return (f"The SpamAssassin public corpus' {messages:,} ham messages ({PACKAGE}), read as `.eml` files and as one "
            "mbox that Python's `mailbox` writes from them. Ours is the indexer's whole reading (checks, titles, the "
            "sender, recipients and date, each part in its declared charset); the peer takes each message's body "
            "alone, so it does less per message. Warnings are every issue the reading reported: attachments named "
            "(save them as files to index them) and text that is not UTF-8; the last column counts the mbox's "
            "messages whose text is exactly what their `.eml` file gives.\n\n" + markdown_table(header, rows))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", type=Path, default=PROJECT_ROOT / ".cache" / "mail")
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args(argv)
    files = sorted(fetch(args.cache).glob("*.eml"))
    with tempfile.TemporaryDirectory(prefix="bench_mail_") as work:
        results = measure(files, Path(work))
    body = table(results, len(files))
    print(body)
    if not args.no_record:
        record("bench_mail", "Mail messages and mbox folders", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
