"""The shape of the product code: imports run one way, functions fit on a screen, and the build
loop exists once (issue 26)."""

from __future__ import annotations

import ast
from pathlib import Path

from data.paths import PROJECT_ROOT as ROOT

PACKAGES = ("indexer", "search", "training", "ui", "data")
MAX_FUNCTION_LINES = 80


def product_modules() -> dict[str, Path]:
    modules = {"app": ROOT / "app.py"}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            modules[name] = path
    return modules


def imported_modules(path: Path, modules: dict[str, Path]) -> set[str]:
    """The product modules `path` imports, anywhere in it (function-level and TYPE_CHECKING too):
    `from pkg import mod` counts as `pkg.mod` when that is a module, else as `pkg`."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in modules else node.module)
    return {name for name in found if name in modules}


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                other = stack.pop()
                on_stack.discard(other)
                component.append(other)
                if other == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles


def test_the_cycle_finder_finds_a_cycle():
    assert import_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_product_packages_have_no_import_cycles():
    modules = product_modules()
    graph = {name: imported_modules(path, modules) - {name} for name, path in modules.items()}
    assert import_cycles(graph) == []


def test_no_product_function_is_longer_than_a_screen():
    long = []
    for name, path in product_modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{name}.{node.name}: {lines} lines")
    assert long == []


def test_the_embeddings_ingest_has_no_commit_loop_of_its_own():
    """One build loop (indexer/build/loop.py): ingest only checks its input and supplies vectors."""
    source = (ROOT / "indexer" / "build" / "ingest.py").read_text(encoding="utf-8")
    tree = ast.parse(source)
    loops = [node for node in ast.walk(tree) if isinstance(node, ast.While)]
    assert loops == [] and ".commit(" not in source and "index.transaction(" not in source


def test_every_semsearch_variable_is_read_in_indexer_settings_only():
    """One reader per environment variable: SEMSEARCH_API_CONFIG is the API's own hand-over
    to its workers, written and read by search/api.py alone."""
    readers = []
    for name, path in product_modules().items():
        source = path.read_text(encoding="utf-8")
        for line in source.splitlines():
            if ("environ" in line or "getenv" in line) and "SEMSEARCH_" in line:
                readers.append(name)
    assert set(readers) <= {"indexer.settings"}, readers
    settings_source = (ROOT / "indexer" / "settings.py").read_text(encoding="utf-8")
    for variable in ("SEMSEARCH_INDEX", "SEMSEARCH_DB", "SEMSEARCH_RERANKER", "SEMSEARCH_MODEL_LOADING",
                     "SEMSEARCH_BUILD_SOURCE", "SEMSEARCH_BUILD_STAMP", "SEMSEARCH_DATA"):
        assert settings_source.count(f'"{variable}"') == 1, variable


def test_the_default_k_is_defined_once_for_programs_and_once_for_the_screen():
    import re

    definitions, literals = [], []
    pattern = re.compile(r"(\bk: int = \d|\bk: Annotated\[int.*\] = \d|\"-k\".*default=\d|\bk: int = Field\(\d)")
    # The surfaces that take a search's k; metrics@10 and calibration@10 are other k's.
    surfaces = ("search.api", "search.api_models", "search.__main__", "search.eval", "search.config",
                "search.params", "search.searcher", "app", "ui.")
    for name, path in product_modules().items():
        if not name.startswith(surfaces):
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            if re.match(r"\s*(DEFAULT_K|SCREEN_K) = ", line):
                definitions.append(name)
            if pattern.search(line):
                literals.append(f"{name}: {line.strip()}")
    assert sorted(definitions) == ["search.params", "search.params"]
    assert literals == [], "a default k written as a number instead of DEFAULT_K or SCREEN_K"


def test_one_function_gives_the_bi_encoders_input_for_a_passage():
    """The build (in its loop, or ahead of it on a GPU) and a repair's re-embedding call `bi_encoder_input(s)(_of)`;
    nothing else puts an embedded title in front of a passage."""
    callers = []
    for name, path in product_modules().items():
        source = path.read_text(encoding="utf-8")
        if "embedded_title(" in source and name != "indexer.sources.passage_text":
            callers.append(name)
        if "bi_encoder_input(" in source or "bi_encoder_inputs(" in source or "bi_encoder_inputs_of(" in source:
            callers.append(f"uses {name}")
    assert sorted(callers) == ["uses indexer.build.background_embed", "uses indexer.build.pipeline",
                               "uses indexer.build.repair", "uses indexer.sources.passage_text"]


def test_the_rrf_constant_is_checked_in_one_place():
    checks = [name for name, path in product_modules().items()
              if "must not be negative; Cormack" in path.read_text(encoding="utf-8")]
    assert checks == ["search.fusion"]


def test_whether_a_search_reranks_is_decided_in_one_place():
    """`resolve_reranker` decides which reranker a process offers and whether it is on by default;
    `Searcher.reranks` decides each search (asked, else that default). No surface decides again."""
    import re

    rule = re.compile(r"rerank\b[^=\n]* is None|if rerank is None|enabled_by_default\)")
    deciders = sorted(name for name, path in product_modules().items()
                      if rule.search(path.read_text(encoding="utf-8")))
    assert deciders == ["search.rerank", "search.searcher"], deciders


def test_all_sql_is_written_in_the_sql_store():
    """SQLAlchemy is imported by the tables (`indexer.store.schema`) and the store that queries them;
    everything else calls the store's named functions."""
    importers, queries = [], []
    for name, path in product_modules().items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                modules = [alias.name for alias in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                if any(module.split(".")[0] == "sqlalchemy" for module in modules):
                    importers.append(name)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in (
                    "select", "delete", "insert", "update", "text"):
                queries.append(name)
    assert sorted(set(importers)) == ["indexer.store.schema", "indexer.store.sql_store"], importers
    assert sorted(set(queries)) == ["indexer.store.sql_store"], queries


def test_the_indexer_layers_import_one_way():
    """indexer.build uses Index; Index uses indexer.store; anything may use indexer.sources; the
    shared leaves (errors, settings, layout, model_spec, encoding, embedding, pipelined_encoding, rust_tokenizer) use none of the layers
    above them."""
    modules = product_modules()
    order = {"indexer.sources": 0, "indexer.store": 1, "indexer.index": 2, "indexer.build": 3}

    def layer(name: str) -> int | None:
        return next((rank for prefix, rank in order.items() if name == prefix or name.startswith(prefix + ".")), None)

    upward = []
    for name, path in modules.items():
        if not name.startswith("indexer.") or name == "indexer.__main__":
            continue
        mine = layer(name)
        for other in imported_modules(path, modules):
            theirs = layer(other)
            if theirs is not None and (mine is None or theirs > mine):
                upward.append(f"{name} -> {other}")
    assert upward == [], upward
    assert {p.name for p in (ROOT / "indexer").glob("*.py")} <= {
        "__init__.py", "__main__.py", "embedding.py", "encoding.py", "errors.py", "index.py", "layout.py",
        "model_spec.py", "pipelined_encoding.py", "rust_tokenizer.py", "settings.py"}, "a module at the top of indexer/ that belongs in a layer"
