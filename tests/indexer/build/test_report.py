"""What a build says of itself reads at a large build's size: figures with thousands separators."""

from __future__ import annotations

from pathlib import Path

from indexer import IndexConfig
from indexer.build.loop import interrupted_message
from indexer.build.report import BuildReport


def large_report(tmp_path: Path) -> BuildReport:
    """The figures of a /usr/share/doc build stopped with Ctrl-C (786 documents, 80,551 passages)."""
    return BuildReport(index_dir=tmp_path, model="m", documents_added=6_531, documents_unchanged=582,
                       passages_committed=80_551, passages_embedded=80_551, total_documents=1_368,
                       total_passages=120_314, seconds=1_472.0, embed_seconds=1_300.0, commits=4,
                       documents_committed=786)


def test_the_summary_separates_thousands(tmp_path):
    summary = large_report(tmp_path).summary()
    assert summary.startswith("1,368 documents, 120,314 passages in the index (+6,531 new, ~0 changed, "
                              "-0 removed, 582 unchanged); embedded 80,551 passages in 1300.0 s (62.0 passages/s)")


def test_the_interrupted_message_separates_thousands(tmp_path):
    config = IndexConfig(source=tmp_path, index_dir=tmp_path / "idx")
    message = interrupted_message(config, large_report(tmp_path))
    assert message.startswith("Interrupted: 786 documents (80,551 passages) of this build are committed to ")
    assert "which now holds 1,368 documents and can be searched" in message
