/* libcublas.so.12 for a machine that has only CUDA 13's cuBLAS (libcublas.so.13).

faiss-gpu-cu12 links libcublas.so.12; the wheel that provides it (nvidia-cublas-cu12) is 350 MB
or more, over what one call to the lent GPU machine may carry. FAISS calls eight cuBLAS
functions, all still in cuBLAS 13 with the same arguments. This library exports them under
faiss's version name (libcublas.so.12) and jumps to cuBLAS 13's own: the registers and the
stack reach cuBLAS untouched. Users install nvidia-cublas-cu12 with requirements-gpu.txt and
need none of this; bench/bench_gpu.py uses it only on the device machine.

Build: gcc -shared -fPIC -O2 -o libcublas.so.12 -Wl,-soname,libcublas.so.12 \
           -Wl,--version-script=cublas12.map cublas12_shim.c -ldl
*/
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#define NAMES(X) X(cublasCreate_v2) X(cublasDestroy_v2) X(cublasGemmEx) X(cublasGemmStridedBatchedEx) \
    X(cublasGetMathMode) X(cublasSetMathMode) X(cublasSetStream_v2) X(cublasSgemmEx)

#define POINTER(name) void *shim_##name;
NAMES(POINTER)

#define TRAMPOLINE(name) __asm__(".globl " #name "\n.type " #name ",@function\n" #name ":\n" \
                                 "  jmp *shim_" #name "(%rip)\n.size " #name ", .-" #name "\n");
NAMES(TRAMPOLINE)

__attribute__((constructor)) static void resolve(void) {
    void *lib = dlopen("libcublas.so.13", RTLD_NOW | RTLD_GLOBAL);
    if (!lib) {
        fprintf(stderr, "cublas12 shim: %s (put CUDA 13's cuBLAS on LD_LIBRARY_PATH)\n", dlerror());
        abort();
    }
#define RESOLVE(name) if (!(shim_##name = dlsym(lib, #name))) { \
        fprintf(stderr, "cublas12 shim: libcublas.so.13 has no %s\n", #name); abort(); }
    NAMES(RESOLVE)
}
