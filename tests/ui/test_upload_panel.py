from __future__ import annotations

from pathlib import Path

from indexer.build.report import BuildReport
from ui.upload_panel import upload_message
from ui.uploads import UploadResult


def test_the_upload_message_counts_read_and_skipped_files_apart() -> None:
    report = BuildReport(index_dir=Path("idx"), model="m", documents_added=1, passages_embedded=3,
                         total_documents=7)
    result = UploadResult(report, saved=["a.txt", "b.png", "c.pdf", "d.zip"],
                          issues=["b.png: binary file (a PNG image)", "c.pdf: encrypted PDF",
                                  "d.zip: a ZIP archive that is not a Word file"])
    assert upload_message(result) == ("Added 1 new document and updated 0 documents from 1 of 4 files; "
                                      "3 skipped (below) (3 passages embedded). The index now holds 7 documents.")
    clean = UploadResult(report, saved=["a.txt"], issues=[])
    assert "from 1 file (3 passages embedded)" in upload_message(clean)
