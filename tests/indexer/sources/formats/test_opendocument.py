from __future__ import annotations

import pytest

from indexer.sources.formats import UnreadableDocument
from indexer.sources.formats.opendocument import read_opendocument
from tests.indexer.sources.formats.samples import truncate, write_odp, write_odt

BLOCKS = [("h1", "Installation"), ("p", "Read this first."), ("h2", "Linux"), ("p", "Unpack the tarball into /opt."),
          ("h1", "Usage"), ("p", "Run the widget daily.")]
SLIDES = [("Quarterly results", ["Revenue rose by a tenth", "Costs held steady"]),
          ("", ["A slide without a title"]),
          ("Next steps", ["Hire two engineers"])]


def test_headings_become_the_section_path_tables_rows_and_lists_paragraphs(tmp_path):
    extracted = read_opendocument(write_odt(tmp_path / "w.odt", BLOCKS, title="The Handbook",
                                            table=[["Flag", "Meaning"], ["-v", "verbose"]], items=["first", "second"]))
    text = extracted.text
    assert extracted.title == "The Handbook"
    start = text.index("Unpack")
    assert extracted.outline.locate(start, start + 10).section == ("Installation", "Linux")
    start = text.index("Run the widget")
    assert extracted.outline.locate(start, start + 10).label == "Usage"
    assert "Flag | Meaning\n\n-v | verbose" in text
    assert text.endswith("first\n\nsecond")
    assert extracted.outline.page_starts == ()  # ODT has no fixed pages


def test_the_table_of_contents_is_left_out_and_the_first_heading_titles_an_untitled_file(tmp_path):
    extracted = read_opendocument(write_odt(tmp_path / "w.odt", BLOCKS))
    assert extracted.text.startswith("Installation\n\nRead this first.")
    assert "Contents" not in extracted.text
    assert extracted.title == "Installation"


def test_each_slide_is_a_page_titled_by_its_title_frame(tmp_path):
    extracted = read_opendocument(write_odp(tmp_path / "talk.odp", SLIDES, title="Board meeting"))
    text, outline = extracted.text, extracted.outline
    assert extracted.title == "Board meeting"
    start = text.index("Costs held")
    assert outline.locate(start, start + 5).label == "p. 1 · Quarterly results"
    start = text.index("A slide without")
    assert outline.locate(start, start + 5).page_first == 2
    start = text.index("Hire two")
    assert outline.locate(start, start + 5).label == "p. 3 · Next steps"
    assert [h.title for h in outline.headings] == ["Quarterly results", "Next steps"]


def test_a_truncated_file_says_so(tmp_path):
    with pytest.raises(UnreadableDocument, match="damaged or truncated OpenDocument file"):
        read_opendocument(truncate(write_odt(tmp_path / "w.odt", BLOCKS)))


def test_a_file_without_text(tmp_path):
    with pytest.raises(UnreadableDocument, match=r"OpenDocument text file \(.odt\) without text"):
        read_opendocument(write_odt(tmp_path / "w.odt", [("p", "   ")]))


def test_images_in_a_paragraph_are_left_out_and_spaces_kept(tmp_path):
    """odfdo's own text of a paragraph names an image by its path in the package; those are not
    the document's words (real manuals: davical's guide had 47 "Pictures/....png" in its text)."""
    import odfdo

    path = write_odt(tmp_path / "w.odt", [("h1", "Setup"), ("p", "placeholder")])
    document = odfdo.Document(str(path))
    paragraph = document.body.get_paragraph(content="placeholder")
    paragraph.text = "Click"
    paragraph.append(odfdo.Frame.image_frame("Pictures/100000000000003200000032F4F2703F.png", size=("1cm", "1cm")))
    paragraph.append_plain_text("  the   Save button.")
    document.save(str(path))
    text = read_opendocument(path).text
    assert text == "Setup\n\nClick  the   Save button."


def test_a_password_protected_file_says_so(tmp_path):
    """An encrypted package keeps its mimetype and manifest readable and lists, in the manifest,
    the encryption of each part it scrambles (ODF 1.2, part 3, section 3.8)."""
    import zipfile

    plain = write_odt(tmp_path / "plain.odt", BLOCKS)
    locked = tmp_path / "locked.odt"
    with zipfile.ZipFile(plain) as source, zipfile.ZipFile(locked, "w") as target:
        for item in source.infolist():
            data = source.read(item)
            if item.filename == "content.xml":
                data = bytes(range(256)) * 8  # what encrypted, deflated content looks like
            elif item.filename == "META-INF/manifest.xml":
                data = data.replace(b'manifest:full-path="content.xml" manifest:media-type="text/xml"/>',
                                    b'manifest:full-path="content.xml" manifest:media-type="text/xml">'
                                    b'<manifest:encryption-data manifest:checksum-type="SHA1/1K" manifest:checksum="x">'
                                    b'<manifest:algorithm manifest:algorithm-name="Blowfish CFB" '
                                    b'manifest:initialisation-vector="x"/></manifest:encryption-data>'
                                    b'</manifest:file-entry>')
                assert b"encryption-data" in data
            target.writestr(item, data)
    with pytest.raises(UnreadableDocument, match="password-protected OpenDocument file"):
        read_opendocument(locked)
