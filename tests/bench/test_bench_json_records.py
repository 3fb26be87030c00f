"""bench/bench_json_records.py at a small size: the JSON and CSV exports and their JSON Lines peer
hold the same records, and a read in a child process counts every one of them."""

from __future__ import annotations

import json

from bench.bench_json_records import measure, write_sources
from indexer.sources.readers import read_documents


def test_the_export_and_its_peer_read_to_the_same_texts(tmp_path):
    export, lines, table, _ = write_sources(tmp_path, 30)
    assert len(json.loads(export.read_text())) == 30
    ours = {doc.doc_id.split("#")[1]: doc for doc in read_documents(export)}
    peer = {doc.doc_id: doc for doc in read_documents(lines)}
    assert ours.keys() == peer.keys() and len(ours) == 30
    # The export's text is its body and comments (each under its heading), as the peer's text field.
    assert all(ours[key].text == peer[key].text and ours[key].title == peer[key].title for key in ours)
    rows = {doc.doc_id.split("#ACME-")[1]: doc for doc in read_documents(table)}  # Jira's shape: a key per row
    assert rows.keys() == peer.keys()
    assert all(rows[key].text == peer[key].text and rows[key].title == peer[key].title for key in rows)
    counted = measure(export)
    assert counted["documents"] == 30 and counted["seconds"] > 0 and counted["rss_mb"] > 0
