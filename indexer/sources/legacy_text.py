"""Text saved in a legacy 8-bit or East Asian encoding rather than UTF-8: which one, from its bytes.

`decode_legacy` is tried only on bytes that are not UTF-8. Chosen by measurement on Debian's
translated manual pages saved in 11 legacy encodings (bench/bench_encodings.py, BENCHMARKS.md
"Text files not in UTF-8"): Windows-1252 alone gives back Western European text (the commonest
case: old changelogs, AUTHORS files, exported tickets) but no other script; charset-normalizer
alone recognises Cyrillic, Japanese and Korean but calls most Western European files Windows-1250,
Big5 or Shift-JIS. So a file whose Windows-1252 reading looks like a Western language (a few
accented letters among ASCII words) is read so, its valid UTF-8 sequences kept (a changelog
in UTF-8 with older entries in Latin-1), and any other is read as charset-normalizer guesses.
Central European and Turkish files saved in their own code pages come back with some letters
wrong (ř as ø, ş as þ); the caller says which encoding it used, so a user can re-save the file
as UTF-8.
"""

from __future__ import annotations

import codecs
import re

# Western European languages put an accent on a small share of their letters (French about 4%,
# Portuguese 6%); Cyrillic, Greek or CJK bytes read as Windows-1252 give mostly accented
# "letters", often several in a row.
_MAX_ACCENTED_SHARE = 0.3
_ACCENTED_RUN = re.compile(r"[^\W\d_a-zA-Z]{4,}")
_LETTERS = re.compile(r"[^\W\d_]")
# The code pages documents in other scripts were saved in; charset-normalizer is asked to choose
# among these only (left free, it read stray bytes as a Ukrainian DOS page).
_OTHER_SCRIPTS = ("cp1250", "iso8859_2", "cp1251", "koi8_r", "koi8_u", "iso8859_5", "cp1253", "iso8859_7",
                  "cp1254", "iso8859_9", "cp1255", "iso8859_8", "cp1256", "iso8859_6", "cp1257", "iso8859_13",
                  "cp874", "cp932", "shift_jis", "euc_jp", "euc_jis_2004", "iso2022_jp", "cp949", "euc_kr",
                  "gb18030", "gb2312", "big5")
# A guess in another script needs this many letters beyond ASCII: a few stray bytes in an
# English file are damage, not Cyrillic.
_MIN_OTHER_LETTERS = 16
_WHOLE_BYTES = 1 << 16


def _western(text: str) -> bool:
    letters = _LETTERS.findall(text)
    if not letters:
        return True
    accented = sum(1 for letter in letters if not letter.isascii())
    return accented / len(letters) <= _MAX_ACCENTED_SHARE and _ACCENTED_RUN.search(text) is None


def _byte_as_cp1252(err: UnicodeError) -> tuple[str, int]:
    """A codec error handler: the one byte UTF-8 could not decode, read as Windows-1252 (a file
    in UTF-8 with a few older lines in Latin-1 keeps both right); a byte Windows-1252 leaves
    undefined fails the decoding."""
    if not isinstance(err, UnicodeDecodeError):
        raise err
    return err.object[err.start : err.start + 1].decode("cp1252"), err.start + 1


_HANDLER = "semsearch-utf8-else-cp1252"
codecs.register_error(_HANDLER, _byte_as_cp1252)


def decode_legacy(raw: bytes) -> tuple[str, str] | None:
    """(text, the encoding's name) of bytes that are not UTF-8, or None when no encoding fits."""
    try:
        text = raw.decode("utf-8", errors=_HANDLER)
    except UnicodeDecodeError:
        text = None
    if text is not None and _western(text):
        return text, "Windows-1252"
    from charset_normalizer import from_bytes

    # The whole of a small file; 16 pieces spread over a large one (its guess takes a pass in
    # Python over what it reads, for each code page).
    steps, chunk = (1, max(1, len(raw))) if len(raw) <= _WHOLE_BYTES else (16, 4096)
    best = from_bytes(raw, steps=steps, chunk_size=chunk, cp_isolation=list(_OTHER_SCRIPTS)).best()
    if best is None:
        return None
    other = str(best)
    if sum(1 for letter in _LETTERS.findall(other) if not letter.isascii()) < _MIN_OTHER_LETTERS:
        return None
    return other, best.encoding
