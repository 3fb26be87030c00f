"""The requirement files: every direct dependency pinned, requirements-gpu.txt the same as
requirements.txt with only the FAISS build swapped, and the product's code importing nothing that
only requirements-dev.txt installs (`make run` installs requirements.txt alone)."""

from __future__ import annotations

import ast

from data.paths import PROJECT_ROOT as ROOT

# requirements-dev.txt's packages by the name they are imported as.
DEV_IMPORTS = {"ray", "pytest", "xdist", "hypothesis", "websockets", "httpx", "schemathesis", "fpdf", "pdfminer",
               "docx2txt", "odf", "ruff", "mypy", "mkdocs", "material"}
PRODUCT = ("indexer", "search", "training", "ui", "data", "app.py")
# Imported only inside the function that needs it, with an error naming requirements-dev.txt.
OPTIONAL = {("indexer/build/ray_embed.py", "ray"), ("search/api_ray.py", "ray")}


def pins(name: str) -> dict[str, str]:
    out = {}
    for line in (ROOT / name).read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            package, version = line.split("==")
            out[package] = version
    return out


def test_every_direct_dependency_is_pinned_and_gpu_file_only_swaps_faiss():
    cpu, gpu, dev = pins("requirements.txt"), pins("requirements-gpu.txt"), pins("requirements-dev.txt")
    assert cpu["torch"] == "2.13.0"
    assert "faiss-cpu" in cpu and "faiss-cpu" not in gpu
    assert any(name.startswith("faiss-gpu") for name in gpu)
    assert {k: v for k, v in cpu.items() if k != "faiss-cpu"} == {
        k: v for k, v in gpu.items() if not k.startswith("faiss-gpu")
    }
    assert not set(cpu) & set(dev), "a package pinned in both files can drift apart"
    assert {"ray[data,serve]", "pytest", "schemathesis", "mkdocs"} <= set(dev)


def _imports(path) -> set[tuple[str, bool]]:
    """(top-level package, imported at module level) of every import in a file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = {id(node) for node in tree.body}
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {(alias.name.split(".")[0], id(node) in top) for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add((node.module.split(".")[0], id(node) in top))
    return found


def test_the_product_imports_nothing_that_only_the_dev_requirements_install():
    files = [ROOT / "app.py"] + [f for d in PRODUCT if d != "app.py" for f in (ROOT / d).rglob("*.py")]
    assert len(files) > 50
    wrong = sorted(
        f"{f.relative_to(ROOT)} imports {name}" + ("" if top else " (in a function)")
        for f in files for name, top in _imports(f)
        if name in DEV_IMPORTS and (str(f.relative_to(ROOT)), name) not in OPTIONAL)
    assert not wrong, wrong
