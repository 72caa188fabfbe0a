// A stand-in for cuBLAS (libcublas.so.13) over the stand-in driver (cuda.c): the handle calls
// streamgraph's ops::Gemm makes, each returning at once; a GEMM is one kernel launch on the
// handle's stream, so that a capture records it as one node. For counting the host work around
// library calls (benches/host-overhead.sh), nothing else.
//
//   cc -O2 -shared -fPIC -o libcublas.so.13 cublas.c -ldl
#include <dlfcn.h>
#include <stdlib.h>
typedef int status;
typedef int (*launch_fn)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                         unsigned, void*, void**, void**);
typedef struct handle { void* stream; } handle;
static char gemm_kernel;
// The stand-in driver's launch, from the libcuda.so.1 the program loaded already.
static launch_fn launch(void){
  static launch_fn f;
  if(!f){ void* cuda=dlopen("libcuda.so.1", RTLD_NOW); if(cuda) f=(launch_fn)dlsym(cuda,"cuLaunchKernel"); }
  return f;
}
// With STUB_CUBLAS_THRASH_KIB=N in the environment, each GEMM first writes N KiB of memory of
// its own, as cuBLAS's heuristics walk far more code and data than the calls around them: the
// caller's code and data are then fetched from farther caches (wall-clock probes only).
static void thrash(void){
  static long kib=-1; static volatile char* mem;
  if(kib<0){ const char* e=getenv("STUB_CUBLAS_THRASH_KIB"); kib=e?atol(e):0; if(kib>0) mem=malloc(kib*1024); if(!mem) kib=0; }
  for(long i=0;i<kib*1024;i+=64) mem[i]++;
}
// With STUB_CUBLAS_CODE=1, each GEMM also runs about 64 KiB of code of its own, as cuBLAS's
// heuristics run far more code than the calls around them: under `valgrind --tool=callgrind
// --cache-sim=yes` the caller's first-level instruction misses then count the distinct lines of
// code its own path runs.
#define STEP1 x = x * 31u + 7u;
#define STEP4 STEP1 STEP1 STEP1 STEP1
#define STEP16 STEP4 STEP4 STEP4 STEP4
#define STEP256 STEP16 STEP16 STEP16 STEP16 STEP16 STEP16 STEP16 STEP16 \
  STEP16 STEP16 STEP16 STEP16 STEP16 STEP16 STEP16 STEP16
static __attribute__((noinline)) void code_walk(void){
  static volatile unsigned x;
  STEP256 STEP256 STEP256 STEP256 STEP256 STEP256 STEP256 STEP256
  STEP256 STEP256 STEP256 STEP256 STEP256 STEP256 STEP256 STEP256
}
static void run_code(void){
  static int on=-1;
  if(on<0){ const char* e=getenv("STUB_CUBLAS_CODE"); on=e&&*e=='1'; }
  if(on) code_walk();
}
static status gemm(handle* h){
  thrash();
  run_code();
  launch_fn f=launch(); if(!f) return 14; // CUBLAS_STATUS_INTERNAL_ERROR
  return f(&gemm_kernel,1,1,1,1,1,1,0,h->stream,0,0) ? 13 : 0; // CUBLAS_STATUS_EXECUTION_FAILED
}
status cublasCreate_v2(handle** h){ *h=calloc(1,sizeof(handle)); return 0; }
status cublasDestroy_v2(handle* h){ free(h); return 0; }
status cublasSetPointerMode_v2(handle* h, int mode){ return 0; }
status cublasSetStream_v2(handle* h, void* s){ h->stream=s; return 0; }
status cublasSetWorkspace_v2(handle* h, void* w, size_t bytes){ return 0; }
status cublasGetVersion_v2(handle* h, int* v){ *v=130000; return 0; }
status cublasGemmEx(handle* h, int ta, int tb, int m, int n, int k, const void* alpha,
                    const void* a, int at, int lda, const void* b, int bt, int ldb,
                    const void* beta, void* c, int ct, int ldc, int compute, int algo){
  return gemm(h);
}
status cublasGemmStridedBatchedEx(handle* h, int ta, int tb, int m, int n, int k,
                                  const void* alpha, const void* a, int at, int lda, long long sa,
                                  const void* b, int bt, int ldb, long long sb, const void* beta,
                                  void* c, int ct, int ldc, long long sc, int count, int compute,
                                  int algo){
  return gemm(h);
}
