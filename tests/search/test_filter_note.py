"""The note of a filter that matched no document, from the fields it names and the index's."""

from __future__ import annotations

from search.filter_note import LISTED_FIELDS, no_match_note

EVERYONE = [("_type", 40), ("_path", 40), ("_id", 40)]


def test_an_absent_field_is_named_with_the_closest_field_and_the_fields_documents_have():
    note = no_match_note(("auther",), [*EVERYONE, ("author", 12), ("year", 30)])
    assert note.startswith("No document matched the filter: no document of this index has the field 'auther'.")
    assert "Did you mean 'author'?" in note
    assert "'author' (12 documents), 'year' (30 documents); and '_id', '_path', '_type'" in note


def test_a_name_like_none_of_the_fields_gets_no_guess_and_a_long_list_is_cut():
    fields = [*EVERYONE] + [(f"field{i:02d}", 100 - i) for i in range(LISTED_FIELDS + 3)]
    note = no_match_note(("zzz",), fields)
    assert "Did you mean" not in note and "'field00' (100 documents)" in note
    assert f"'field{LISTED_FIELDS - 1:02d}'" in note and f"'field{LISTED_FIELDS:02d}'" not in note
    assert "and 3 more;" in note


def test_an_index_without_metadata_says_so_and_a_reserved_name_is_guessed():
    note = no_match_note(("_typ",), EVERYONE)
    assert "Did you mean '_type'?" in note and "Its documents have no metadata fields" in note


def test_fields_that_are_there_with_no_value_met_say_to_widen_the_filter():
    note = no_match_note((), [])
    assert "its fields are there, but no document's values meet its conditions" in note
