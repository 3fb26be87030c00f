"""Records as documents: one place names a record of a file or of a workbook's sheet."""

from __future__ import annotations

from indexer.sources.records import record_name


def test_a_record_is_named_by_its_file_its_sheet_and_its_id_or_line() -> None:
    assert record_name("export.json", "7", 3) == "export.json#7"
    assert record_name("export.json", None, 3) == "export.json#L3"
    assert record_name("support.xlsx", "SUP-12", 4, sheet="Tickets") == "support.xlsx#Tickets!SUP-12"
    assert record_name("support.xlsx", None, 4, sheet="Tickets") == "support.xlsx#Tickets!R4"
