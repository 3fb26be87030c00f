"""JSON exports of records (tickets, issues): one document a record, its prose as text under a
heading per field, its title, id and line, the rest as metadata a search filters on; any other
JSON is read as text, as before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from indexer import IndexConfig, build_index
from indexer.sources import json_records
from indexer.sources.json_records import NotAnObject, NotRecords, is_prose, records
from indexer.sources.readers import count_documents, mbox_message_line, read_documents
from search import Searcher

# The shape of GitHub's REST API (GET /repos/{owner}/{repo}/issues), cut to a few of its fields.
GITHUB = [
    {"url": "https://api.github.com/repos/octo/app/issues/42", "id": 1999999901, "node_id": "I_kwDOAbc",
     "number": 42, "title": "Login page freezes after a wrong password",
     "user": {"login": "ada", "id": 7},
     "labels": [{"id": 1, "name": "bug", "description": "Something isn't working"},
                {"id": 2, "name": "ui", "description": None}],
     "state": "open", "comments": 2, "created_at": "2025-03-01T10:00:00Z",
     "body": "Steps to reproduce:\r\n1. Open the login page\r\n2. Enter a wrong password twice\r\n\r\n"
             "The spinner never stops.",
     "body_html": "<p>Steps to reproduce:</p>"},
    {"number": 43, "title": "Export to CSV drops the last row", "user": {"login": "bob"}, "labels": [],
     "state": "closed", "body": None},
]
# The shape of Jira's search API (GET /rest/api/2/search): the records under `issues`, beside paging.
JIRA = {"expand": "schema,names", "startAt": 0, "maxResults": 50, "total": 1, "warningMessages": [],
        "issues": [{"id": "10001", "key": "SUP-12", "fields": {
            "summary": "Refund not received after cancellation",
            "status": {"name": "In Progress", "description": "The issue is being worked on by its assignee."},
            "description": "The customer cancelled on 3 March and was promised a refund within five days.",
            "comment": {"total": 1, "comments": [
                {"author": {"displayName": "Ada Lovelace"}, "body": "Escalated to billing; the refund is queued."}]},
        }}]}


def test_a_github_export_is_a_record_an_issue():
    first, second = records(json.dumps(GITHUB, indent=2))
    assert (first.line, first.record_id, first.title) == (2, "42", "Login page freezes after a wrong password")
    # Line ends normalised; the rendering (body_html) and the label's description left out of the text.
    assert first.text == ("Steps to reproduce:\n1. Open the login page\n2. Enter a wrong password twice\n\n"
                          "The spinner never stops.")
    assert [(h.start, h.title) for h in first.outline.headings] == [(0, "body")]
    assert first.metadata["labels.name"] == ["bug", "ui"]
    assert first.metadata["labels.description"] == ["Something isn't working"]
    assert first.metadata["user.login"] == "ada" and first.metadata["state"] == "open"
    assert "number" not in first.metadata and "title" not in first.metadata and "body_html" not in first.metadata
    # A ticket of a title alone is its title.
    assert (second.record_id, second.text, second.metadata) == ("43", "Export to CSV drops the last row",
                                                                {"user.login": "bob", "state": "closed"})


def test_a_jira_export_reads_its_fields_and_comments():
    (issue,) = records(json.dumps(JIRA))
    assert (issue.record_id, issue.title) == ("SUP-12", "Refund not received after cancellation")
    description = "The customer cancelled on 3 March and was promised a refund within five days."
    assert issue.text == description + "\n\nEscalated to billing; the refund is queued."
    assert [(h.start, h.title) for h in issue.outline.headings] == [
        (0, "fields.description"), (len(description) + 2, "fields.comment.comments[1].body")]
    # The status's description is the same in every record with that status: metadata, not text.
    assert issue.metadata["fields.status.description"] == "The issue is being worked on by its assignee."
    assert issue.metadata["fields.comment.comments.author.displayName"] == ["Ada Lovelace"]
    assert issue.metadata["id"] == "10001"


def test_a_slack_channel_day_is_a_document_a_message():
    """Slack's export: a channel's day is a list of messages; `blocks` renders `text` again in pieces."""
    day = [{"type": "message", "user": "U024BE7LH", "ts": "1700000000.000100",
            "text": "The deploy to staging failed with a timeout on the database migration.",
            "blocks": [{"type": "rich_text", "elements": [{"type": "rich_text_section", "elements": [
                {"type": "text", "text": "The deploy to staging failed"}]}]}],
            "reactions": [{"name": "eyes", "count": 2}]}]
    (message,) = records(json.dumps(day))
    assert message.text == "The deploy to staging failed with a timeout on the database migration."
    assert (message.title, message.record_id, message.metadata["user"]) == ("", None, "U024BE7LH")
    assert message.metadata["reactions.name"] == ["eyes"]


@pytest.mark.parametrize("text, why", [
    ('{"name": "x", "version": 1}', "no list of objects"),
    ("[1, 2, 3]", "does not open with an object"),
    ("[]", "does not open with an object"),
    ('{"cells": [{"source": "x"}], "metadata": {"kernel": "python3"}}', "beside the records"),
    ('{"a": [{"b": 1}], "c": [{"d": 2}]}', "more than one list"),
    ('[{"a": "one two three four"}] [{}]', "more than one JSON value"),
    ('{"a": [{"b": "one two three four"}],}', "not valid JSON"),
    ('[{"a": "one two three four"},', "not valid JSON"),
    ("plain text", "not a JSON array or object"),
])
def test_json_of_another_kind_is_not_records(text, why):
    with pytest.raises(NotRecords, match=why):
        list(records(text))
    assert json_records.count(text) == 1


def test_an_element_that_is_not_an_object_is_named_by_its_line():
    found = list(records('[\n{"text": "a note"},\n"stray",\n{"text": "another"}\n]'))
    assert [type(item).__name__ for item in found] == ["Record", "NotAnObject", "Record"]
    assert found[1] == NotAnObject(3, "a string")
    assert json_records.count('[{"a": 1}, 2, {"b": 3}]') == 3


def test_prose_is_several_lines_or_four_words_with_letters():
    assert is_prose("The spinner never stops")
    assert is_prose("Done\nand dusted")
    assert not is_prose("In Progress")
    assert not is_prose("Mon, 02 Jan 2024 10:00:00 +0000")


def test_a_folder_reads_an_export_a_document_a_record(tmp_path):
    source = tmp_path / "support"
    (source / "exports").mkdir(parents=True)
    (source / "exports" / "issues.json").write_text(json.dumps(GITHUB, indent=2), encoding="utf-8")
    (source / "jira.json").write_text(json.dumps(JIRA), encoding="utf-8")
    (source / "settings.json").write_text('{"theme": "dark", "plugins": ["a", "b"]}', encoding="utf-8")
    issues: list = []
    docs = {doc.doc_id: doc for doc in read_documents(source, on_issue=issues.append)}
    assert set(docs) == {"exports/issues.json#42", "exports/issues.json#43", "jira.json#SUP-12", "settings.json"}
    assert not issues
    login = docs["exports/issues.json#42"]
    assert (login.source, login.line, login.location) == ("exports/issues.json", 2, "exports/issues.json:2")
    assert login.outline.locate(0, 10).section == ("body",)
    assert docs["settings.json"].text.startswith('{"theme"')  # any other JSON: one document of text, as before
    # A JSON record's `#L<line>` name is not an mbox message's.
    assert mbox_message_line("exports/issues.json#L12", "exports/issues.json") is None
    assert count_documents(source) == 2 + 1 + 1


def test_records_without_an_id_are_named_by_their_line_and_empty_ones_are_named(tmp_path):
    source = tmp_path / "notes.json"
    source.write_text('[\n  {"text": "Call the supplier about the late delivery."},\n  {"tags": ["x"]},\n'
                      '  {"subject": "Quarterly review"}\n]\n', encoding="utf-8")
    issues: list = []
    docs = list(read_documents(source, on_issue=issues.append))
    assert [(doc.doc_id, doc.title, doc.line) for doc in docs] == [
        ("notes.json#L2", "notes.json, line 2", 2), ("notes.json#L4", "Quarterly review", 4)]
    assert [(issue.line, issue.doc_id) for issue in issues] == [(3, "notes.json#L3")]
    assert "empty record" in issues[0].problem and "body, description" in issues[0].problem


def test_records_that_hold_no_text_leave_the_file_read_as_text(tmp_path):
    # A JSON Patch: a list of objects, none with prose. Read whole, as before, not as empty records.
    patch = tmp_path / "patch.json"
    patch.write_text('[{"op": "add", "path": "/a", "value": 1}, {"op": "remove", "path": "/b"}]', encoding="utf-8")
    issues: list = []
    (doc,) = read_documents(patch, on_issue=issues.append)
    assert (doc.doc_id, doc.text.startswith('[{"op"'), issues) == ("patch.json", True, [])


def test_a_large_export_is_read_past_the_size_of_one_document(tmp_path):
    # Each record is under the limit; the file, read as one document, would be over it.
    export = tmp_path / "tickets.json"
    export.write_text(json.dumps([{"id": i, "body": f"Ticket number {i} reports a broken printer in room {i}."}
                                  for i in range(200)]), encoding="utf-8")
    docs = list(read_documents(export, max_document_chars=1_000))
    assert len(docs) == 200 and docs[199].doc_id == "tickets.json#199"
    issues: list = []
    assert list(read_documents(export, on_issue=issues.append, max_document_chars=50)) == []
    assert len(issues) == 200 and "over the limit of 50 characters" in issues[0].problem


def test_a_search_finds_a_ticket_and_filters_on_its_fields(tmp_path, tiny_model):
    source = tmp_path / "support"
    source.mkdir()
    (source / "issues.json").write_text(json.dumps(GITHUB), encoding="utf-8")
    (source / "jira.json").write_text(json.dumps(JIRA), encoding="utf-8")
    index = tmp_path / "idx"
    build_index(IndexConfig(source=source, index_dir=index, model=tiny_model, show_progress=False))
    with Searcher(index, model=tiny_model) as searcher:
        hits = searcher.search("spinner never stops", k=5, mode="bm25")
        assert hits[0].doc_id == "issues.json#42" and hits[0].location.section == ("body",)
        bugs = searcher.search("password refund printer", k=5, filter={"labels.name": "bug"})
        assert [hit.doc_id for hit in bugs] == ["issues.json#42"]
        refund = searcher.search("refund queued billing", k=5, mode="bm25",
                                 filter={"fields.status.name": "In Progress"})
        assert [(hit.doc_id, hit.title) for hit in refund] == [("jira.json#SUP-12",
                                                                "Refund not received after cancellation")]


def test_every_json_file_on_this_machine_reads_without_an_error():
    """Real files: the JSON under /usr/share (cmake's flag tables and iso-codes' lists are records,
    Node.js's API docs are not), each read as records or as text, never raising."""
    files = sorted(p for p in Path("/usr/share").rglob("*.json") if p.is_file() and p.stat().st_size < 4_000_000)
    if len(files) < 20:
        pytest.skip(f"found {len(files)} JSON files under /usr/share; run on the project's CI image")
    as_records = 0
    for path in files:
        issues: list = []
        docs = list(read_documents(path, on_issue=issues.append))
        if docs and docs[0].doc_id != path.name:
            as_records += 1
            assert all(doc.doc_id.startswith(f"{path.name}#") and doc.line for doc in docs)
    assert as_records >= 10


def test_a_document_nested_in_json_keeps_all_its_prose():
    """A record whose prose lies lists deep (an API reference: a module, its methods, their
    parameters) is not a ticket: all of its prose is its text, each part under its path."""
    method = "Reads the whole file and returns its bytes, or a string when an encoding is given."
    module = {"textRaw": "File system", "name": "fs", "desc": "The fs module reads and writes files.",
              "methods": [{"name": f"readFile{i}", "desc": f"{method} Variant {i}.",
                           "params": [{"name": "path", "desc": "Where the file is, as a string or a URL."}]}
                          for i in range(20)]}
    (record,) = records(json.dumps({"type": "module", "modules": [module]}))
    assert record.title == "fs" and record.text.startswith("The fs module reads and writes files.\n\nReads")
    assert f"{method} Variant 19." in record.text
    assert "methods[20].params[1].desc" in [h.title for h in record.outline.headings]
    # A ticket's few words below its own fields (a label's description) stay metadata.
    (ticket,) = records(json.dumps([GITHUB[0]]))
    assert "Something" not in ticket.text


def test_nodejs_api_references_lose_no_description():
    """Real files: Node.js's API reference as JSON (/usr/share/doc/nodejs/api/*.json.gz, most read
    as records): every `desc` of every module, class and method is in the text indexed."""
    import gzip

    files = sorted(Path("/usr/share/doc/nodejs/api").glob("*.json.gz"))
    if len(files) < 10:
        pytest.skip("Node.js's API reference as JSON: apt-get install nodejs-doc, or run on the project's CI image")
    as_records = 0
    for path in files[::4]:
        docs = list(read_documents(path, on_issue=lambda issue: None))
        if [doc.doc_id for doc in docs] in ([], [path.name]):
            continue  # not records (errors.json: two lists of objects): JSON text, or left out as data
        as_records += 1
        texts = "\n".join(doc.text for doc in docs)
        stack, descs = [json.loads(gzip.decompress(path.read_bytes()))], []
        while stack:
            value = stack.pop()
            if isinstance(value, dict):
                descs.extend(v.strip() for k, v in value.items() if k == "desc" and isinstance(v, str))
                stack.extend(value.values())
            elif isinstance(value, list):
                stack.extend(value)
        missing = [desc for desc in descs if desc and desc.replace("\r\n", "\n") not in texts]
        assert descs and not missing, (path.name, len(missing), missing[:2])
    assert as_records >= len(files[::4]) // 2


def test_a_jsonl_line_without_a_text_field_is_read_as_a_record(tmp_path):
    """`jq -c '.[]' issues.json > issues.jsonl`: each line a ticket, read as the export's records
    are, with JSON Lines' ids (`id`, `_id`, else the line)."""
    lines = tmp_path / "issues.jsonl"
    lines.write_text("\n".join(json.dumps(row) for row in [
        *GITHUB, {"id": "t-3", "text": "A line with its text field reads as it always did.", "labels": ["x"]},
        {"id": "t-4", "title": "A title alone"}, {"id": "t-5", "state": "open"}]) + "\n", encoding="utf-8")
    issues: list = []
    docs = list(read_documents(lines, on_issue=issues.append))
    assert [(doc.doc_id, doc.title, doc.text) for doc in docs][1:] == [
        ("issues.jsonl#L2", "Export to CSV drops the last row", "Export to CSV drops the last row"),
        ("t-3", "", "A line with its text field reads as it always did."),
        ("t-4", "A title alone", "A title alone")]
    assert docs[0].title == "Login page freezes after a wrong password" and docs[0].doc_id == "1999999901"
    assert docs[0].text.startswith("Steps to reproduce:\n1.") and docs[0].metadata["labels.name"] == ["bug", "ui"]
    assert docs[0].metadata["number"] == 42 and "id" not in docs[0].metadata
    assert docs[2].metadata == {"labels": ["x"]}
    # A line of neither text nor title is named.
    assert [(issue.line, issue.problem.split(":")[0]) for issue in issues] == [(5, "empty document")]
