"""CSV exports of records (tickets) without a `text` column: a document a row, its prose columns
as text under their names, its title and id found by their columns' names, the rest metadata a
search filters on; a table whose rows mostly hold no prose is refused as before."""

from __future__ import annotations

import csv
import gzip
import io
from pathlib import Path

import pytest

from indexer import IndexConfig, build_index
from indexer.sources import csv_records
from indexer.sources.json_records import NotRecords
from indexer.sources.readers import read_documents
from search import Searcher

# The shape of Jira's CSV export (Filters > Export > CSV, all fields), cut to a few columns: a
# repeated column per label and per comment, a comment as "date;author;body".
JIRA_CSV = (
    "Summary,Issue key,Issue id,Issue Type,Status,Priority,Labels,Labels,Description,Comment,Comment,"
    "Custom field (Story Points)\n"
    'Password reset email never arrives,SUP-12,10012,Bug,Open,High,auth,email,"Customers report that '
    'the reset email does not arrive after they request it.\nIt started after the mail relay change.",'
    '"03/Jan/24 10:15 AM;jsmith;Checked the relay logs, the messages are queued but never sent.",'
    '"04/Jan/24 9:02 AM;ada;Relay restarted; the queue is draining now.",3\n'
    "Export to PDF cuts the last page,SUP-13,10013,Bug,Done,Low,export,,"
    '"When a report has more than ten pages, the exported PDF stops before the final page.",,,\n'
    "Add dark mode,SUP-14,10014,Story,Open,Medium,,,,,,\n"
)


def read(path: Path) -> tuple[list, list[str]]:
    issues: list = []
    docs = list(read_documents(path, on_issue=issues.append))
    return docs, [str(issue) for issue in issues]


def test_a_jira_csv_export_is_a_document_a_ticket(tmp_path: Path) -> None:
    path = tmp_path / "jira.csv"
    path.write_text(JIRA_CSV, encoding="utf-8")
    docs, issues = read(path)
    assert issues == []
    assert [(d.doc_id, d.title, d.line) for d in docs] == [
        ("jira.csv#SUP-12", "Password reset email never arrives", 2),
        ("jira.csv#SUP-13", "Export to PDF cuts the last page", 4),
        ("jira.csv#SUP-14", "Add dark mode", 5),  # a ticket of a title alone is its title
    ]
    first = docs[0]
    assert first.text.startswith("Customers report that the reset email does not arrive")
    assert "the messages are queued but never sent" in first.text and "the queue is draining" in first.text
    assert [h.title for h in first.outline.headings] == ["Description", "Comment[1]", "Comment[2]"]
    assert first.metadata == {"Issue id": "10012", "Issue Type": "Bug", "Status": "Open", "Priority": "High",
                              "Labels": ["auth", "email"], "Custom field (Story Points)": "3"}
    assert docs[1].metadata["Labels"] == ["export"], "a repeated column is a list, even of one"
    assert "Comment" not in docs[1].metadata, "empty cells are left out"


@pytest.mark.parametrize(("header", "rows", "expected_ids"), [
    # the first id-named column whose cells are filled and distinct: "Parent id" repeats, "Ticket ID" does not
    ("Parent id,Ticket ID,Subject,Description", ["7,101,A,{}", "7,102,B,{}"], ["t.csv#101", "t.csv#102"]),
    # no such column: rows go by their line
    ("ID,Subject,Description", ["1,A,{}", "1,B,{}"], ["t.csv#L2", "t.csv#L3"]),
    # an `id` column is the id, as --csv-id names it
    ("id,Subject,Description", ["x1,A,{}", ",B,{}"], ["t.csv#x1", "t.csv#L3"]),
])
def test_the_id_column_is_named_for_an_id_and_names_each_row_once(
    tmp_path: Path, header: str, rows: list[str], expected_ids: list[str],
) -> None:
    path = tmp_path / "t.csv"
    prose = '"The printer on the third floor jams on every second page."'
    path.write_text("\n".join([header, *(row.format(prose) for row in rows)]) + "\n", encoding="utf-8")
    docs, issues = read(path)
    assert issues == [] and [d.doc_id for d in docs] == expected_ids
    assert [d.title for d in docs] == ["A", "B"]


def test_a_table_whose_rows_mostly_hold_no_prose_is_refused_as_before(tmp_path: Path) -> None:
    table = tmp_path / "codes.csv"
    table.write_text("code,name,population\nFR,France,68000000\nDE,Germany,84000000\n", encoding="utf-8")
    docs, issues = read(table)
    assert docs == [] and len(issues) == 1
    assert issues[0].startswith("codes.csv:1: missing CSV column 'text' (columns, comma-separated: code, name, "
                                "population); nor is it read a record a row, as a ticket export is: 0 of its 2 "
                                "rows hold prose (a description, a comment), under half; the first row must name")
    # a registry with an occasional note: one row of three with prose is not an export of records,
    # and a malformed row of a file that is not records is not reported on its own
    notes = tmp_path / "registry.csv"
    notes.write_text('prefix,owner,notes\nab,Ada,\ncd,Bob,\nef,Eve,"Reserved for internal use only, do not take."\n'
                     'gh,Joe,,too,many\n', encoding="utf-8")
    docs, issues = read(notes)
    assert docs == [] and len(issues) == 1 and "1 of its 3 rows hold prose" in issues[0]


def test_a_file_whose_first_row_is_data_is_not_read_as_records(tmp_path: Path) -> None:
    """STS Benchmark's pairs have no header: its first row's numbers and sentences are not column
    names, and its rows would read with sentences for headings."""
    path = tmp_path / "sts-dev.csv"
    path.write_text("main-captions\tMSRvid\t2012test\t0000\t5.000\tA man with a hard hat is dancing.\t"
                    "A man wearing a hard hat is dancing.\n"
                    "main-captions\tMSRvid\t2012test\t0002\t4.750\tA young child is riding a horse.\t"
                    "A child is riding a horse.\n", encoding="utf-8")
    docs, issues = read(path)
    assert docs == [] and len(issues) == 1
    assert "nor is it read a record a row, as a ticket export is: its first row holds data ('0000', '5.000'), " \
        "not the names of columns; the first row must name the columns" in issues[0]


def test_a_text_column_named_on_the_command_line_is_never_guessed(tmp_path: Path) -> None:
    path = tmp_path / "jira.csv"
    path.write_text(JIRA_CSV, encoding="utf-8")
    issues: list = []
    docs = list(read_documents(path, on_issue=issues.append, csv_columns=("id", "title", "Body")))
    assert docs == [] and len(issues) == 1
    assert "missing CSV column 'Body'" in issues[0].problem and "prose" not in issues[0].problem


def test_reading_names_the_columns_a_build_takes() -> None:
    lines = JIRA_CSV.splitlines()
    reader = csv.reader(io.StringIO(JIRA_CSV, newline=""))
    columns = next(reader)
    rows = [csv_records.Row(line, values) for line, values in enumerate(reader, start=2)]
    assert len(lines) > len(rows)  # a quoted field spans two lines
    assert csv_records.reading(rows, columns) == csv_records.Reading(
        text=("Description", "Comment"), title="Summary", id="Issue key")
    with pytest.raises(NotRecords):
        csv_records.reading([csv_records.Row(2, ["FR", "France"])], ["code", "name"])


def test_a_search_finds_a_ticket_of_a_csv_and_filters_on_its_columns(tmp_path: Path, tiny_model) -> None:
    source = tmp_path / "support"
    source.mkdir()
    (source / "jira.csv.gz").write_bytes(gzip.compress(JIRA_CSV.encode()))
    index = tmp_path / "idx"
    build_index(IndexConfig(source=source, index_dir=index, model=tiny_model, show_progress=False))
    with Searcher(index, model=tiny_model) as searcher:
        hits = searcher.search("restarted draining", k=5, mode="bm25")
        assert hits[0].doc_id == "jira.csv.gz#SUP-12" and "draining" in hits[0].text
        assert hits[0].location.section == ("Comment[1]",), "the passage of the comments opens at the first"
        done = searcher.search("report pages relay", k=5, mode="bm25", filter={"Status": "Done"})
        assert [hit.doc_id for hit in done] == ["jira.csv.gz#SUP-13"]
        labelled = searcher.search("email", k=5, filter={"Labels": "auth"})
        assert [hit.doc_id for hit in labelled] == ["jira.csv.gz#SUP-12"]


def test_every_csv_file_on_this_machine_reads_without_an_error() -> None:
    """Real files: the CSV tables under /usr/share (distro-info's release tables, TeX Live's
    registry of prefixes, gawk's samples) hold too little prose to be records and are refused as
    before, with one issue each, never raising."""
    files = sorted(p for p in Path("/usr/share").rglob("*.csv*") if p.is_file())
    if len(files) < 3:
        pytest.skip(f"found {len(files)} CSV files under /usr/share; run on the project's CI image")
    for path in files:
        docs, issues = read(path)
        assert docs == [] and len(issues) == 1, (path, issues[:3])


def test_a_bad_row_of_an_export_is_named_once_and_the_rest_read(tmp_path: Path) -> None:
    """The rows are parsed twice (the id column and the share of prose first, then the records),
    and a row's issue is reported once."""
    path = tmp_path / "tickets.csv"
    path.write_text("Subject,Description\n"
                    "Printer jams,The printer on the third floor jams on every second page.\n"
                    "VPN drops,The VPN drops every hour since the update,,extra cell\n"
                    "Badge reader,The badge reader at the side door rejects new cards.\n", encoding="utf-8")
    docs, issues = read(path)
    assert [d.title for d in docs] == ["Printer jams", "Badge reader"]
    assert issues == ["tickets.csv:3: row has 4 fields but the header has 2; put a field that holds commas in "
                      'double quotes ("...")']
