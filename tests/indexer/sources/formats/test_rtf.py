from __future__ import annotations

import pytest

from indexer.sources.formats import UnreadableDocument
from indexer.sources.formats.rtf import read_rtf
from tests.indexer.sources.formats.samples import write_rtf

BODY = ("{\\info{\\title Caf\\'e9 opening hours}{\\author Ana}}\n"
        "\\pard\\s1\\b Opening hours\\b0\\par\n"
        "\\pard\\plain\\f0 The caf\\'e9 opens at nine; a coffee costs 3 \\u8364?.\\par\n"
        "{\\pict\\pngblip 89504e470d0a1a0a0000000d49484452}\n"
        "\\pard Closed on Sundays.\\par")


def test_the_words_are_read_and_the_formatting_left_out(tmp_path):
    extracted = read_rtf(write_rtf(tmp_path / "hours.rtf", BODY))
    assert extracted.text == "Opening hours\nThe café opens at nine; a coffee costs 3 €.\nClosed on Sundays."
    assert extracted.title == "Café opening hours"
    assert not extracted.outline


def test_the_declared_code_page_decodes_escaped_bytes(tmp_path):
    body = "\\pard \\'cf\\'f0\\'e8\\'e2\\'e5\\'f2, \\'ec\\'e8\\'f0\\par"
    extracted = read_rtf(write_rtf(tmp_path / "ru.rtf", body, header="{\\rtf1\\ansi\\ansicpg1251\\deff0"))
    assert extracted.text == "Привет, мир"


def test_raw_utf8_bytes_are_read_as_utf8(tmp_path):
    path = write_rtf(tmp_path / "u.rtf", "\\pard PLACEHOLDER\\par")
    path.write_bytes(path.read_bytes().replace(b"PLACEHOLDER", "Straße".encode()))
    assert read_rtf(path).text == "Straße"


def test_a_file_of_formatting_only(tmp_path):
    with pytest.raises(UnreadableDocument, match="RTF file without text"):
        read_rtf(write_rtf(tmp_path / "empty.rtf", "{\\pict\\pngblip 89504e47}\\pard\\par"))
