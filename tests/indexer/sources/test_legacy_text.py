"""decode_legacy: which encoding bytes that are not UTF-8 were saved in."""

from __future__ import annotations

import pytest

from indexer.sources.legacy_text import decode_legacy


@pytest.mark.parametrize(("text", "encoding", "named"), [
    ("Jörg Müller fixed the café's menu; the naïve façade stayed.", "cp1252", "Windows-1252"),
    ("Ça coûte 5 € à la boulangerie “Chez Noël”.", "cp1252", "Windows-1252"),
    ("Привет, мир! Это тестовый файл на русском языке, сохранённый давно.", "cp1251", "cp1251"),
    ("Привет, мир! Это тестовый файл на русском языке, сохранённый давно.", "koi8-r", "koi8_r"),
    ("これは日本語のテキストファイルです。古いエディタで保存されました。", "euc-jp", "euc_jis_2004"),
])
def test_text_comes_back_as_written_and_the_encoding_is_named(text, encoding, named):
    assert decode_legacy(text.encode(encoding)) == (text, named)


def test_utf8_with_older_latin1_lines_keeps_both():
    raw = "2024: Zoë fixed it\n".encode() + "1999: Günter wrote it\n".encode("latin-1")
    assert decode_legacy(raw) == ("2024: Zoë fixed it\n1999: Günter wrote it\n", "Windows-1252")


@pytest.mark.parametrize("raw", [b"\x80\x81 desert dunes, now not UTF-8", b"\x9d\x8f\x90 three undefined bytes"])
def test_stray_bytes_no_encoding_explains_are_refused(raw):
    assert decode_legacy(raw) is None
