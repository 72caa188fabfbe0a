// Conditional nodes side by side, built with the CUDA graph API alone (no streamgraph): why
// streamgraph orders the device blocks of one body (docs/MODEL.md).
//
//   conc N LAUNCHES: N WHILE loops side by side at the top level of a graph
//   body N LAUNCHES: N WHILE loops side by side in the body of one WHILE loop
//   nest N LAUNCHES: N WHILE loops nested one in the other
//
// Every loop runs two iterations of a short kernel. Each launch is given two seconds; one that
// takes longer is reported as a hang (exit status 3). Build and run on a GPU machine:
//
//   nvcc -O2 -std=c++17 -arch=sm_90 -o side_by_side benches/driver-repro/side_by_side_conditionals.cu
//   for m in "conc 8" "body 2" "nest 6"; do ./side_by_side $m 3000; done
//
// On the H200 with driver 580.159.04 (CUDA 13.0), twice each: conc 2 to 8 and nest 3 to 6 ran
// 3,000 launches; body 2, 3, 4 and 6 hung on the first launch.
#include <cuda_runtime.h>
#include <cstdio>
#include <cstring>
#include <chrono>
#include <cstdlib>
#include <unistd.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e)); exit(2);} } while (0)
__global__ void begin_k(cudaGraphConditionalHandle h, unsigned* ctr, unsigned limit) { *ctr = 0u; cudaGraphSetConditional(h, limit > 0u); }
__global__ void next_k(cudaGraphConditionalHandle h, unsigned* ctr, unsigned limit) { unsigned c = *ctr + 1u; *ctr = c; cudaGraphSetConditional(h, c < limit); }
__global__ void spin_k(unsigned* t) { atomicAdd(t, 1u); long long s = clock64(); while (clock64() - s < 2000) {} }
static cudaGraphNode_t kern(cudaGraph_t g, void* f, void** args, const cudaGraphNode_t* deps, size_t n) {
  cudaKernelNodeParams p = {}; p.func = f; p.gridDim = dim3(1); p.blockDim = dim3(1); p.kernelParams = args;
  cudaGraphNode_t node; CK(cudaGraphAddKernelNode(&node, g, deps, n, &p)); return node; }
static cudaGraphNode_t cond(cudaGraph_t g, cudaGraphConditionalHandle h, cudaGraphConditionalNodeType t, const cudaGraphNode_t* deps, size_t n, cudaGraph_t* body) {
  cudaGraphNodeParams p = {}; p.type = cudaGraphNodeTypeConditional; p.conditional.handle = h; p.conditional.type = t; p.conditional.size = 1;
  cudaGraphNode_t node;
#if CUDART_VERSION >= 13000
  CK(cudaGraphAddNode(&node, g, deps, nullptr, n, &p));
#else
  CK(cudaGraphAddNode(&node, g, deps, n, &p));
#endif
  *body = p.conditional.phGraph_out[0]; return node; }
unsigned* ctrs; unsigned* total; int used = 0;
static unsigned L = 2;
// A while loop of L iterations in g after deps; its body gets `inner` (may add nodes) then spin + next.
template <class F> static cudaGraphNode_t loop(cudaGraph_t g, const cudaGraphNode_t* deps, size_t n, F inner) {
  cudaGraphConditionalHandle* h = new cudaGraphConditionalHandle; CK(cudaGraphConditionalHandleCreate(h, g, 0, 0));
  unsigned** c = new unsigned*; *c = ctrs + used++;
  void** a = new void*[3]{h, c, &L};
  cudaGraphNode_t b = kern(g, (void*)begin_k, a, deps, n);
  cudaGraph_t body; cudaGraphNode_t w = cond(g, *h, cudaGraphCondTypeWhile, &b, 1, &body);
  cudaGraphNode_t last[64]; int nl = inner(body, last);
  void** s = new void*[1]{&total}; last[nl++] = kern(body, (void*)spin_k, s, nullptr, 0);
  kern(body, (void*)next_k, a, last, nl);
  return w; }
int main(int argc, char** argv) {
  if (argc < 4) { printf("usage: %s conc|body|nest N LAUNCHES\n", argv[0]); return 1; }
  const char* mode = argv[1]; int N = atoi(argv[2]); int launches = atoi(argv[3]);
  if (N < 1 || N > 60) { printf("N is 1 to 60\n"); return 1; }
  CK(cudaFree(0)); CK(cudaMalloc(&ctrs, 4096)); CK(cudaMalloc(&total, 4)); CK(cudaMemset(total, 0, 4));
  cudaGraph_t g; CK(cudaGraphCreate(&g, 0));
  auto none = [](cudaGraph_t, cudaGraphNode_t*) { return 0; };
  if (!strcmp(mode, "conc")) { for (int i = 0; i < N; i++) loop(g, nullptr, 0, none); }
  else if (!strcmp(mode, "body")) {
    loop(g, nullptr, 0, [&](cudaGraph_t b, cudaGraphNode_t* last) { for (int i = 0; i < N; i++) last[i] = loop(b, nullptr, 0, none); return N; }); }
  else if (!strcmp(mode, "nest")) {
    struct R { static int go(cudaGraph_t b, cudaGraphNode_t* last, int d) {
      if (d == 0) return 0;
      last[0] = loop(b, nullptr, 0, [d](cudaGraph_t bb, cudaGraphNode_t* l) { return go(bb, l, d - 1); }); return 1; } };
    cudaGraphNode_t l[4]; R::go(g, l, N); }
  cudaGraphExec_t x; CK(cudaGraphInstantiate(&x, g, 0));
  cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  for (int i = 0; i < launches; i++) {
    CK(cudaGraphLaunch(x, s));
    auto t0 = std::chrono::steady_clock::now();
    for (;;) {
      cudaError_t e = cudaStreamQuery(s);
      if (e == cudaSuccess) break;
      if (e != cudaErrorNotReady) { printf("%s %d: launch %d: %s\n", mode, N, i, cudaGetErrorString(e)); return 2; }
      if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(2)) { printf("%s %d: HANG at launch %d\n", mode, N, i); fflush(stdout); _exit(3); }
    }
  }
  unsigned t; CK(cudaMemcpy(&t, total, 4, cudaMemcpyDeviceToHost));
  printf("%s %d: ok, %d launches, total %u\n", mode, N, launches, t);
  return 0;
}
