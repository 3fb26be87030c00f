"""requirements-gpu.txt must stay requirements.txt with only the FAISS build swapped."""

from __future__ import annotations

from data.paths import PROJECT_ROOT as ROOT


def pins(name: str) -> dict[str, str]:
    out = {}
    for line in (ROOT / name).read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            package, version = line.split("==")
            out[package] = version
    return out


def test_every_direct_dependency_is_pinned_and_gpu_file_only_swaps_faiss():
    cpu, gpu = pins("requirements.txt"), pins("requirements-gpu.txt")
    assert cpu["torch"] == "2.13.0"
    assert "faiss-cpu" in cpu and "faiss-cpu" not in gpu
    assert any(name.startswith("faiss-gpu") for name in gpu)
    assert {k: v for k, v in cpu.items() if k != "faiss-cpu"} == {
        k: v for k, v in gpu.items() if not k.startswith("faiss-gpu")
    }
