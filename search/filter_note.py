"""Why a filtered search found nothing, in words: the note `SearchResult.filter_note` carries.

A filter on a field no document has keeps nothing, as in MongoDB or Qdrant, and the search
answers with no hits, which alone reads like "nothing relevant". The command line and the API
have no list of the index's fields to check a name against (the app's filter box offers only
fields the index holds), so the note names the absent field, the closest field the documents do
have, and the fields they have.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from indexer.store.metadata_filter import RESERVED_FIELDS

# Fields a note lists at the most, the most common first.
LISTED_FIELDS = 12


def no_match_note(absent: Sequence[str], fields: Sequence[tuple[str, int]]) -> str:
    """The note for a filter that matched no document: `absent` are the fields it names that no
    document has; `fields` are (field, documents that have it) of the index's metadata, the most
    common first (`Index.metadata_fields`)."""
    if not absent:
        return ("No document matched the filter: its fields are there, but no document's values meet "
                "its conditions. Widen or remove the filter.")
    names = [name for name, _ in fields if name not in RESERVED_FIELDS]
    missing = ", ".join(repr(name) for name in absent)
    parts = [f"No document matched the filter: no document of this index has the field{'s' * (len(absent) > 1)} "
             f"{missing}."]
    guesses = {wrong: close[0] for wrong in absent
               if (close := difflib.get_close_matches(wrong, [*names, *RESERVED_FIELDS], n=1, cutoff=0.6))}
    if len(absent) == 1 and guesses:
        parts.append(f"Did you mean {guesses[absent[0]]!r}?")
    elif guesses:
        parts.append(f"Did you mean {', '.join(f'{right!r} for {wrong!r}' for wrong, right in guesses.items())}?")
    counts = dict(fields)
    listed = ", ".join(f"{name!r} ({counts[name]:,} documents)" for name in names[:LISTED_FIELDS])
    more = f" and {len(names) - LISTED_FIELDS:,} more" if len(names) > LISTED_FIELDS else ""
    parts.append(f"Its documents' fields: {listed}{more}; and '_id', '_path', '_type', which every document has."
                 if names else "Its documents have no metadata fields, only '_id', '_path' and '_type', "
                 "which every document has.")
    return " ".join(parts)
