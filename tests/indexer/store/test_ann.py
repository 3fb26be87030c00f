"""Tests for indexer/store/ann.py: every index kind against brute force on tiny synthetic vectors."""

from __future__ import annotations

import faiss
import numpy as np
import pytest

from indexer.store import ann
from indexer.store.ann import Calibration, VectorIndexConfig, VectorIndexPlan

DIM = 16


def unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def clustered(n: int, dim: int = DIM, clusters: int = 40, spread: float = 0.5, seed: int = 0) -> np.ndarray:
    """Unit vectors around random unit centroids, clustered like real embeddings."""
    rng = np.random.default_rng(seed)
    centroids = unit(rng.standard_normal((clusters, dim)))
    noise = rng.standard_normal((n, dim)) * spread / np.sqrt(dim)
    return unit(centroids[rng.integers(clusters, size=n)] + noise)


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Tiny indexes gain nothing from threads, and on shared cores OpenMP barriers cost seconds."""
    previous = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    yield
    faiss.omp_set_num_threads(previous)


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray]:
    vectors = clustered(3000)
    ids = np.arange(3000, dtype=np.int64) * 3 + 100  # ids are not positions
    return ids, vectors


@pytest.fixture(scope="module")
def spread_data() -> tuple[np.ndarray, np.ndarray]:
    """Broad clusters in 32 dimensions: hard enough that the smallest nprobe/efSearch fails."""
    return np.arange(3000, dtype=np.int64) + 7, clustered(3000, dim=32, clusters=10, spread=1.5)


@pytest.fixture(scope="module")
def pq_data() -> tuple[np.ndarray, np.ndarray]:
    vectors = clustered(10_000, seed=1)
    return np.arange(10_000, dtype=np.int64) + 5, vectors


def build(config: VectorIndexConfig, ids: np.ndarray, vectors: np.ndarray) -> tuple[faiss.Index, VectorIndexPlan]:
    plan = ann.resolve(config, len(vectors), vectors.shape[1])
    index = ann.create(plan, vectors.shape[1])
    assert ann.train(index, vectors, plan.trained_on) == plan.trained_on
    index.add_with_ids(vectors, ids)
    return index, plan


CONFIGS = [
    VectorIndexConfig(kind="flat"),
    VectorIndexConfig(kind="flat", storage="float16"),
    VectorIndexConfig(kind="flat", storage="sq8"),
    VectorIndexConfig(kind="ivf", nlist=32),
    VectorIndexConfig(kind="ivf", storage="sq8"),
    VectorIndexConfig(kind="hnsw", hnsw_m=8),
    VectorIndexConfig(kind="hnsw", storage="float16", hnsw_m=8),
]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: f"{c.kind}-{c.storage}")
def test_every_kind_builds_searches_and_finds_added_ids(config, data):
    ids, vectors = data
    index, plan = build(config, ids, vectors)
    assert index.ntotal == len(ids)
    ann.set_search_param(index, ann.search_param(index), 8 if plan.kind == "ivf" else 64)
    _, found = index.search(vectors[:20], 5)
    assert set(found.ravel()) <= set(ids.tolist())
    assert np.mean(found[:, 0] == ids[:20]) >= 0.9  # a stored vector finds itself
    assert sorted(ann.stored_ids(index)) == sorted(ids)


def test_ivfpq_builds_searches_and_removes(pq_data):
    ids, vectors = pq_data
    index, plan = build(VectorIndexConfig(kind="ivfpq"), ids, vectors)
    assert plan.factory == f"IVF{plan.nlist},PQ{DIM // 8}" and plan.storage == "pq"
    ann.set_search_param(index, "nprobe", 16)
    _, found = index.search(vectors[:10], 5)
    assert set(found.ravel()) <= set(ids.tolist())
    assert ann.remove_ids(index, ids[:100]) == 100
    assert index.ntotal == len(ids) - 100
    assert not set(ann.stored_ids(index)) & set(ids[:100].tolist())


@pytest.mark.parametrize("storage", ["float32", "sq8"])
def test_ivf_remove_keeps_the_other_ids_right(storage, data):
    # IndexIDMap2 around an IVF would return wrong ids after this; the bare IVF must not.
    ids, vectors = data
    index, plan = build(VectorIndexConfig(kind="ivf", storage=storage, nlist=32), ids, vectors)
    assert ann.supports_remove(plan)
    assert ann.remove_ids(index, ids[:1000]) == 1000
    ann.set_search_param(index, "nprobe", 32)
    _, found = index.search(vectors[1000:1050], 1)
    assert np.mean(found[:, 0] == ids[1000:1050]) >= 0.95
    assert sorted(ann.stored_ids(index)) == sorted(ids[1000:])


def test_hnsw_does_not_support_remove(data):
    plan = ann.resolve(VectorIndexConfig(kind="hnsw"), 100, DIM)
    assert not ann.supports_remove(plan)
    assert ann.supports_remove(ann.resolve(VectorIndexConfig(kind="flat"), 100, DIM))


def test_resolve_auto_picks_flat_then_ivf_sq8():
    small = ann.resolve(VectorIndexConfig(), ann.EXACT_MAX_PASSAGES, 384)
    assert (small.kind, small.storage, small.factory, small.trained_on) == ("flat", "float32", "Flat", 0)
    big = ann.resolve(VectorIndexConfig(), ann.EXACT_MAX_PASSAGES + 1, 384)
    assert (big.kind, big.storage) == ("ivf", "sq8")
    assert big.factory == f"IVF{big.nlist},SQ8"
    million = ann.resolve(VectorIndexConfig(), 1_000_000, 384)
    assert million.nlist == 4096 and million.trained_on == ann.TRAIN_POINTS_PER_CENTROID * 4096
    # An IVF asked for by name keeps float32 unless told otherwise.
    assert ann.resolve(VectorIndexConfig(kind="ivf"), 100_000, 384).storage == "float32"
    assert ann.resolve(VectorIndexConfig(kind="hnsw", storage="sq8"), 10, 384).factory == "HNSW32,SQ8"


def test_default_nlist_is_a_power_of_two_with_39_points_per_list():
    assert ann.default_nlist(100_000) == 1024
    assert ann.default_nlist(1_000) == 16  # 4*sqrt(1000) = 126, capped by 1000 // 39 = 25
    assert ann.default_nlist(10**12) == 65_536
    for n in (39, 500, 5_000, 50_000, 3_000_000):
        nlist = ann.default_nlist(n)
        assert nlist & (nlist - 1) == 0 and nlist * 39 <= n
    with pytest.raises(ValueError, match="at least 39 vectors"):
        ann.default_nlist(38)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kind": "annoy"}, "Unknown vector index kind 'annoy'. Valid: auto, flat, ivf, hnsw, ivfpq"),
        ({"storage": "int4"}, "Unknown vector storage 'int4'. Valid: auto, float32"),
        ({"kind": "ivfpq", "storage": "sq8"}, "does not apply to kind 'ivfpq'"),
        ({"kind": "ivf", "nlist": 0}, r"nlist \(0\) must be an integer >= 1"),
        ({"kind": "flat", "nlist": 64}, r"nlist \(64\) applies only to kinds ivf and ivfpq"),
        ({"hnsw_m": 1}, r"hnsw_m \(1\) must be an integer from 2 to 512"),
        ({"kind": "ivfpq", "pq_m": 0}, r"pq_m \(0\) must be an integer >= 1"),
        ({"kind": "ivf", "pq_m": 8}, r"pq_m \(8\) applies only to kind 'ivfpq'"),
        ({"target_recall": 0.0}, r"target_recall \(0.0\) must be in \(0, 1\]"),
        ({"target_recall": 1.5}, r"target_recall \(1.5\) must be in \(0, 1\]"),
    ],
)
def test_bad_configs_say_what_is_wrong(kwargs, message):
    with pytest.raises(ValueError, match=message):
        VectorIndexConfig(**kwargs)


def test_resolve_rejects_what_cannot_be_built():
    with pytest.raises(ValueError, match=r"pq_m \(7\) must divide the dimension \(384\); pass one of 1, 2, 3"):
        ann.resolve(VectorIndexConfig(kind="ivfpq", pq_m=7), 100_000, 384)
    with pytest.raises(ValueError, match="nlist 1024 needs at least 39936 vectors.*got 5000"):
        ann.resolve(VectorIndexConfig(kind="ivf", nlist=1024), 5000, 384)
    with pytest.raises(ValueError, match="ivfpq needs at least 9984 vectors"):
        ann.resolve(VectorIndexConfig(kind="ivfpq"), 5000, 384)
    with pytest.raises(ValueError, match="at least 39 vectors"):
        ann.resolve(VectorIndexConfig(kind="ivf"), 10, 384)
    with pytest.raises(ValueError, match="sq8 storage learns"):
        ann.resolve(VectorIndexConfig(kind="flat", storage="sq8"), 0, 384)


def test_recall_at_k_on_hand_made_arrays():
    exact = np.array([[1, 2, 3], [4, 5, -1], [-1, -1, -1]])
    approx = np.array([[3, 9, 1], [5, 8, 7], [1, 2, 3]])
    # row 0: 2/3; row 1: 1 of 2 valid = 1/2; row 2 has no valid exact id and is skipped
    assert ann.recall_at_k(exact, approx, 3) == pytest.approx((2 / 3 + 1 / 2) / 2)
    assert ann.recall_at_k(exact, approx, 1) == pytest.approx(0.0)
    assert ann.recall_at_k(exact[:, :2], exact[:, :2], 2) == 1.0
    assert ann.recall_at_k(np.full((2, 3), -1), approx[:2], 3) == 1.0


@pytest.mark.parametrize(
    "config", [VectorIndexConfig(kind="ivf", nlist=64), VectorIndexConfig(kind="hnsw", hnsw_m=4)], ids=["ivf", "hnsw"]
)
def test_calibrate_returns_the_smallest_value_that_reaches_the_target(config, spread_data):
    ids, vectors = spread_data
    index, _ = build(config, ids, vectors)
    target = 0.97
    result = ann.calibrate(index, vectors, ids, target, k=10, queries=100)
    assert result.param == ann.search_param(index) and (result.queries, result.k) == (100, 10)
    assert result.recall >= target
    assert result.value > ann._sweep(index, result.param)[0]  # the data is hard enough to test
    assert recall_at(index, vectors, ids, result.param, result.value // 2) < target
    assert recall_at(index, vectors, ids, result.param, result.value) == pytest.approx(result.recall)


def recall_at(index, vectors, ids, param, value) -> float:
    """Recall of `index` at a fixed parameter value, on calibrate's own queries (same seed)."""
    rows = np.random.default_rng(0).choice(len(vectors), size=100, replace=False)
    _, positions = faiss.knn(vectors[rows], vectors, 11, metric=faiss.METRIC_INNER_PRODUCT)
    exact = ann._without_self(ids[positions], ids[rows], 10)
    ann.set_search_param(index, param, value)
    approx = ann._without_self(index.search(vectors[rows], 11)[1], ids[rows], 10)
    return ann.recall_at_k(exact, approx, 10)


def test_calibrate_leaves_the_value_set_and_flat_is_exact(data):
    ids, vectors = data
    index, _ = build(VectorIndexConfig(kind="ivf", nlist=64), ids, vectors)
    result = ann.calibrate(index, vectors, ids, 0.9, queries=50)
    assert faiss.extract_index_ivf(index).nprobe == result.value
    hnsw, _ = build(VectorIndexConfig(kind="hnsw", hnsw_m=4), ids, vectors)
    result = ann.calibrate(hnsw, vectors, ids, 0.9, queries=50)
    assert faiss.downcast_index(hnsw.index).hnsw.efSearch == result.value
    flat, _ = build(VectorIndexConfig(kind="flat"), ids, vectors)
    assert ann.calibrate(flat, vectors, ids, 0.9, queries=50) == Calibration(None, None, 1.0, 50, 10)


def test_calibrate_returns_the_largest_value_when_the_target_is_out_of_reach(data):
    ids, vectors = data
    index, _ = build(VectorIndexConfig(kind="ivf", storage="sq8", nlist=16), ids, vectors)
    result = ann.calibrate(index, vectors, ids, 1.0, queries=50)
    assert result.value == 16 and result.recall < 1.0  # sq8 codes lose a little even at full nprobe


def test_plan_json_round_trip_and_bad_json():
    plan = ann.resolve(VectorIndexConfig(kind="ivfpq", pq_m=48), 200_000, 384)
    assert VectorIndexPlan.from_json(plan.to_json()) == plan
    with pytest.raises(ValueError, match=r"missing keys \['trained_on'\]"):
        VectorIndexPlan.from_json({k: v for k, v in plan.to_json().items() if k != "trained_on"})
    with pytest.raises(ValueError, match="plan kind 'auto' is not one of"):
        VectorIndexPlan.from_json({**plan.to_json(), "kind": "auto"})


@pytest.mark.parametrize("config", [VectorIndexConfig(kind="flat"), VectorIndexConfig(kind="ivf", nlist=32),
                                    VectorIndexConfig(kind="ivf", storage="sq8", nlist=32),
                                    VectorIndexConfig(kind="hnsw", hnsw_m=8)], ids=lambda c: f"{c.kind}-{c.storage}")
def test_reconstruct_all_returns_every_id_and_its_vector(config, data):
    ids, vectors = data
    index, plan = build(config, ids, vectors)
    got_ids, got = ann.reconstruct_all(index)
    order = np.argsort(got_ids)
    assert np.array_equal(got_ids[order], ids)
    if plan.storage == "float32":
        assert np.array_equal(got[order], vectors)
    else:
        assert np.abs(got[order] - vectors).max() < 0.15  # lossy codes decode close
    if plan.kind == "ivf":  # the temporary direct map is gone again
        assert faiss.extract_index_ivf(index).direct_map.type == faiss.DirectMap.NoMap


def test_needs_retrain_flips_when_n_grows(monkeypatch):
    plan = ann.resolve(VectorIndexConfig(kind="ivf"), 50_000, 384)
    assert plan.nlist == 1024 and plan.trained_on == 50_000
    assert not ann.needs_retrain(plan, 50_000)
    assert not ann.needs_retrain(plan, 200_000)
    assert ann.needs_retrain(plan, 200_001)  # 4x the 50k trained on, and a fresh sample is 64k
    assert ann.needs_retrain(ann.resolve(VectorIndexConfig(kind="ivf", nlist=256), 50_000, 384), 1_000_000)
    assert not ann.needs_retrain(ann.resolve(VectorIndexConfig(kind="hnsw"), 50_000, 384), 10**7)
    # Built at 1M: trained on its capped sample of 64 x 4096; growing 5% must not retrain.
    million = ann.resolve(VectorIndexConfig(), 1_000_000, 384)
    assert million.trained_on == 262_144 and not ann.needs_retrain(million, 1_050_000)
    # Without a GPU the lists stop at CPU_MAX_NLIST: a fresh resolve at 10M picks 4096 again, so
    # growing never retrains; with one (uncapped) 8192 lists at 2.2M train on 2x the sample.
    monkeypatch.setattr(ann, "gpu_count", lambda: 0)
    assert not ann.needs_retrain(million, 10_000_000)
    assert ann.resolve(VectorIndexConfig(), 10_000_000, 384).factory == "IVF4096,SQ8"
    monkeypatch.setattr(ann, "gpu_count", lambda: 1)
    assert ann.needs_retrain(million, 2_200_000)
    assert ann.resolve(VectorIndexConfig(), 10_000_000, 384).factory == "IVF16384,SQ8"
    # An explicit --nlist is kept: 64 points per list are all its training would use.
    fixed = VectorIndexConfig(kind="ivf", nlist=256)
    assert not ann.needs_retrain(ann.resolve(fixed, 50_000, 384), 10**7, fixed)


def test_describe():
    flat = ann.resolve(VectorIndexConfig(), 10, 384)
    assert ann.describe(flat, Calibration(None, None, 1.0, 10, 10)) == "exact (Flat)"
    ivf = ann.resolve(VectorIndexConfig(kind="ivf", storage="sq8", nlist=1024), 100_000, 384)
    assert ann.describe(ivf, Calibration("nprobe", 16, 0.9624, 200, 10)) == "IVF1024,SQ8 (nprobe 16, recall@10 0.962)"
    assert ann.describe(ivf, None) == "IVF1024,SQ8 (uncalibrated)"


def test_an_ivf_widens_by_a_constant_over_the_root_of_the_share():
    from indexer.store.ann import ivf_widened, widened

    assert ivf_widened(16, 0.5) == 136 > widened(16, 0.5) == 48  # more lists where matches are many
    assert ivf_widened(16, 0.01) == 960 < widened(16, 0.01) == 1616  # far fewer where they are few
    assert ivf_widened(16, 1.0) == 96
    assert all(ivf_widened(16, s) <= ivf_widened(16, s / 2) for s in (0.5, 0.2, 0.05, 0.01, 0.001))


def test_a_deeper_probe_answers_for_a_shallower_one_as_a_probe_of_that_depth():
    """The merge measures recall@100 and recall@10 from one exact pass (`Probe.at`)."""
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((3000, 32)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors[10] = vectors[11]  # a duplicate: ties broken by the lower row at both depths
    index = faiss.index_factory(32, "IVF32,Flat", faiss.METRIC_INNER_PRODUCT)
    index.train(vectors)
    index.add_with_ids(vectors, np.arange(3000))
    ann.set_search_param(index, "nprobe", 2)
    parts = ann._as_parts(vectors, np.arange(3000), 32)
    deep, shallow = ann.Probe(parts, 100, 200, 0), ann.Probe(parts, 10, 200, 0)
    assert np.array_equal(deep.at(10).exact, shallow.exact)
    assert deep.at(10).recall(index) == shallow.recall(index) == ann.measure_recall(index, vectors, np.arange(3000))
    assert deep.at(10).recall(index) < 1.0  # nprobe 2 of 32 misses some: the check can fail
    with pytest.raises(ValueError, match="depth"):
        shallow.at(11)
