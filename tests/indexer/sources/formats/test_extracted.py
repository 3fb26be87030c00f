from __future__ import annotations

from indexer.sources.formats.extracted import garbled

PROSE = ("A suspension bridge hangs its deck from cables anchored at both ends of the span, and the "
         "towers carry the load down to their foundations. ") * 3


def test_prose_and_formulas_are_not_garbled():
    assert garbled(PROSE) is None
    assert garbled("Let x = a + b, y = 2 c and z = x / y where a, b and c are reals. " * 4) is None
    assert garbled("short") is None  # too short to judge
    # a table of contents or an index: dot leaders are layout, not garbage (dvips.pdf's index)
    index_page = "Index\n" + "".join(f"{word} special (literal PS header). . . . . . . . . . . . . . 3{n}\n"
                                      for n, word in enumerate(["!", "%%BoundingBox", "octal", "oblique"]))
    assert garbled(index_page * 3) is None


def test_three_kinds_of_garbage():
    assert garbled("\ue000\ue013\ue021 " * 40).startswith("undecodable glyphs")
    assert garbled("\n".join(PROSE.replace(" ", ""))).startswith("text set letter by letter")
    assert garbled(" ".join(PROSE.replace(" ", ""))).startswith("text set letter by letter")
    assert garbled("#$%&()*+,-./:;<=>?@[]^_{|}~ " * 10).startswith("mostly symbols")
