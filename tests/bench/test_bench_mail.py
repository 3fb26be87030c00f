"""bench/bench_mail.py on messages written here: both inputs read to the same texts, and the peer
counted beside them."""

from __future__ import annotations

from bench.bench_mail import measure, table
from tests.indexer.sources.formats.test_mail import message


def test_eml_files_and_their_mbox_read_to_the_same_documents(tmp_path):
    source = tmp_path / "messages"
    source.mkdir()
    with_attachment = message("See the log.")
    with_attachment.add_attachment(b"log\n", maintype="text", subtype="plain", filename="a.log")
    for i, mail in enumerate([message("First."), with_attachment, message("From the top, once more.")]):
        (source / f"{i}.eml").write_bytes(mail.as_bytes())
    (tmp_path / "work").mkdir()
    results = measure(sorted(source.glob("*.eml")), tmp_path / "work")
    (eml, eml_peer), (box, box_peer) = results["eml"], results["mbox"]
    assert eml.documents == box.documents == eml_peer.documents == box_peer.documents == 3
    assert eml.texts == box.texts and eml.warnings == box.warnings == 1
    shown = table(results, 3)
    mbox_row = next(line for line in shown.splitlines() if line.startswith("| the same in one mbox | ours"))
    assert mbox_row.split(" | ")[2] == "3" and mbox_row.endswith("| 3 |"), mbox_row  # 3 texts equal the .eml's
    assert shown.count("\n|") == 6  # the header, its rule and 4 rows
