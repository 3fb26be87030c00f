"""Jupyter notebooks as Jupyter writes them (nbformat 4, and 3 from older files): cells read as
Markdown with code fenced, text outputs kept, figures, HTML and tracebacks left out."""

from __future__ import annotations

import json

import pytest

from indexer.sources.formats import UnreadableDocument, is_notebook
from indexer.sources.formats.notebook import read_notebook
from indexer.sources.readers import read_documents

FIGURE_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="


def markdown(source: str) -> dict:
    return {"cell_type": "markdown", "metadata": {}, "source": source.splitlines(keepends=True)}


def code(source: str, *outputs: dict) -> dict:
    return {"cell_type": "code", "execution_count": 1, "metadata": {}, "outputs": list(outputs),
            "source": source.splitlines(keepends=True)}


def notebook(*cells: dict, **metadata: object) -> str:
    return json.dumps({"cells": list(cells), "nbformat": 4, "nbformat_minor": 5,
                       "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python",
                                                   "name": "python3"},
                                    "language_info": {"name": "python"}, **metadata}}, indent=1)


SURVEY = notebook(
    markdown("# Glacier retreat\n\nWe measure how far the tongue moved each year."),
    code("import pandas as pd\ndf = pd.read_csv('survey.csv')\nprint('mean retreat:', df.retreat.mean(), 'm')",
         {"name": "stdout", "output_type": "stream", "text": ["mean retreat: 12.5 m\n"]},
         {"name": "stderr", "output_type": "stream", "text": ["FutureWarning: read_csv will change\n"]},
         {"output_type": "display_data", "metadata": {},
          "data": {"image/png": FIGURE_PNG, "text/plain": ["<Figure size 640x480 with 1 Axes>"]}}),
    markdown("## Moraines\n\nThe moraines were mapped from the ridge."),
    code("df.describe()", {"output_type": "execute_result", "execution_count": 2, "metadata": {},
                           "data": {"text/html": ["<table><tr><td>count</td></tr></table>"],
                                    "text/plain": ["       retreat\ncount     40.0"]}}),
    code("df['x']", {"output_type": "error", "ename": "KeyError", "evalue": "'x'",
                     "traceback": ["\u001b[0;31mKeyError\u001b[0m: 'x'"]}),
    {"cell_type": "raw", "metadata": {}, "source": "Raw notes: survey by boat."},
    code(""),
)


def test_cells_read_as_markdown_with_code_fenced_and_text_outputs_kept():
    extracted = read_notebook(SURVEY)
    text = extracted.text
    assert extracted.title == "Glacier retreat"
    assert text.startswith("# Glacier retreat\n\nWe measure how far the tongue moved each year.\n\n```python\n"
                           "import pandas as pd\n")
    assert "print('mean retreat:', df.retreat.mean(), 'm')\n```\n\nmean retreat: 12.5 m\n\n## Moraines" in text
    assert "       retreat\ncount     40.0" in text  # a result's text, not its HTML
    assert text.endswith("```python\ndf['x']\n```\n\nRaw notes: survey by boat.")
    for left_out in (FIGURE_PNG[:20], "<Figure size", "<table>", "KeyError", "\u001b", '"cell_type"', '"source"',
                     "FutureWarning"):
        assert left_out not in text, left_out
    start = text.index("The moraines were mapped")
    assert extracted.outline.locate(start, start + 10).section == ("Glacier retreat", "Moraines")


def test_a_code_cell_holding_a_fence_gets_a_longer_one():
    text = read_notebook(notebook(code('print("""\n```\n""")'))).text
    assert text.startswith("````python\n") and text.endswith("\n````")


def test_the_notebooks_own_title_wins_over_its_first_heading():
    assert read_notebook(notebook(markdown("## Setup\n\nInstall it."), title="Survey 2024")).title == "Survey 2024"


def test_an_nbformat_3_notebook_reads_its_worksheets():
    old = json.dumps({"nbformat": 3, "nbformat_minor": 0, "metadata": {"name": "survey"}, "worksheets": [{"cells": [
        {"cell_type": "heading", "level": 1, "metadata": {}, "source": ["Glacier retreat"]},
        {"cell_type": "code", "collapsed": False, "input": ["x = 1\n", "print(x)"], "language": "python",
         "metadata": {}, "outputs": [{"output_type": "stream", "stream": "stdout", "text": ["1\n"]},
                                      {"output_type": "pyout", "prompt_number": 2, "metadata": {}, "text": ["2"]}]},
        {"cell_type": "markdown", "metadata": {}, "source": ["Done."]}]}]})
    extracted = read_notebook(old)
    assert extracted.title == "Glacier retreat"
    assert extracted.text == "# Glacier retreat\n\n```\nx = 1\nprint(x)\n```\n\n1\n\n2\n\nDone."


@pytest.mark.parametrize("text, problem", [
    ('{"cells": [', "damaged Jupyter notebook (not valid JSON"),
    ('{"name": "a settings file"}', "JSON without cells: not a Jupyter notebook"),
    ('{"cells": {"a": 1}, "nbformat": 4}', "'cells' is not a list"),
    (notebook(code(""), markdown("  \n")), "without text: every cell is empty"),
])
def test_a_damaged_or_empty_notebook_is_refused_saying_what_it_is(text, problem):
    with pytest.raises(UnreadableDocument) as err:
        read_notebook(text)
    assert problem in str(err.value)


def test_a_notebook_is_told_by_its_name_or_its_json():
    assert is_notebook("survey.ipynb", "{}") and is_notebook("survey.IPYNB", "{}")
    assert is_notebook("survey (copy)", SURVEY)  # saved without its suffix
    assert not is_notebook("settings.json", '{"name": "x", "nbformat_note": "cells"}')
    assert not is_notebook("notes.txt", "The cells in a notebook hold its text.")


def test_a_folder_with_a_notebook_indexes_it_with_sections(tmp_path):
    (tmp_path / "survey.ipynb").write_text(SURVEY, encoding="utf-8")
    (tmp_path / "broken.ipynb").write_text('{"cells": [', encoding="utf-8")
    issues: list = []
    docs = list(read_documents(tmp_path, on_issue=issues.append))
    assert [(doc.doc_id, doc.title) for doc in docs] == [("survey.ipynb", "Glacier retreat")]
    assert [str(issue).split(" (")[0] for issue in issues] == ["broken.ipynb: damaged Jupyter notebook"]


def test_a_long_notebook_with_many_figures_keeps_every_cell_and_no_figure():
    """3,000 cells, a 200 kB figure every tenth: what a long analysis notebook holds."""
    figure = {"output_type": "display_data", "metadata": {}, "data": {"image/png": FIGURE_PNG * 2000,
                                                                       "text/plain": ["<Figure>"]}}
    cells = [markdown(f"## Step {i}\n\nSurvey leg {i} measured the snout.") if i % 2 == 0
             else code(f"plot(leg={i})", *([figure] if i % 10 == 1 else [])) for i in range(3000)]
    extracted = read_notebook(notebook(*cells))
    assert len(extracted.outline.headings) == 1500 and extracted.text.count("```python\nplot(leg=") == 1500
    assert FIGURE_PNG[:20] not in extracted.text and "<Figure>" not in extracted.text
