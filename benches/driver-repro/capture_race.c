// Another thread begins and ends captures on a stream (cuStreamBeginCapture in relaxed mode,
// then cuStreamEndCapture, the graph destroyed or kept) while this thread records an event on
// that stream and queries it: the CUDA driver API alone (loaded with dlopen; no CUDA headers,
// no streamgraph, no cudarc). Why streamgraph's test of another thread's captures
// (tests/soundness_edges.rs, `another_threads_captures_never_hold_a_runs_work`) runs on the
// stand-in driver only.
//
//   cc -O2 -o capture_race benches/driver-repro/capture_race.c -ldl -lpthread
//   ./capture_race MODE ITERATIONS [keep]
//   MODE: record (cuEventRecord alone), query (then cuEventQuery), wait (then a second stream
//   waits for the event); keep: the other thread destroys no graph until the end.
//
// On an H100 with driver 580.159.04 (CUDA 13.0), each of `record 300000`, `query 300000`,
// `query 300000 keep` and `wait 100000` died of SIGSEGV inside cuEventRecord (faulting
// addresses 0x110 to 0x298) within seconds. The same crash, in cuEventRecord or cuEventQuery,
// ended streamgraph's test on that H100 (and, not yet located, on an H200 before). The API is
// documented as thread-safe; nothing but the driver orders two threads' calls on one stream.
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
typedef int CUresult; typedef void* P;
static CUresult (*cuInit)(unsigned); static CUresult (*cuDeviceGet)(int*, int);
static CUresult (*cuDevicePrimaryCtxRetain)(P*, int); static CUresult (*cuCtxSetCurrent)(P);
static CUresult (*cuStreamCreate)(P*, unsigned); static CUresult (*cuEventCreate)(P*, unsigned);
static CUresult (*cuStreamBeginCapture_v2)(P, int); static CUresult (*cuStreamEndCapture)(P, P*);
static CUresult (*cuGraphDestroy)(P); static CUresult (*cuEventRecord)(P, P);
static CUresult (*cuEventQuery)(P); static CUresult (*cuStreamWaitEvent)(P, P, unsigned);
static CUresult (*cuStreamSynchronize)(P);
#define LOAD(n) do { *(void**)&n = dlsym(lib, #n); if (!n) { printf("no %s\n", #n); return 1; } } while (0)
#define CK(x) do { CUresult r_ = (x); if (r_) { printf("%s: %d\n", #x, r_); exit(2); } } while (0)
static P ctx, s; static atomic_int done; static long begun, graphs; static int keep; static P kept[1 << 20];
static void* thief(void* a) {
  (void)a; CK(cuCtxSetCurrent(ctx));
  while (!atomic_load(&done)) {
    if (cuStreamBeginCapture_v2(s, 2)) continue;
    begun++; P g = 0;
    if (cuStreamEndCapture(s, &g) == 0 && g) { if (keep && graphs < (1 << 20)) kept[graphs] = g; else cuGraphDestroy(g); graphs++; }
  }
  return 0;
}
int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "query"; long n = argc > 2 ? atol(argv[2]) : 100000; keep = argc > 3 && !strcmp(argv[3], "keep");
  void* lib = dlopen("libcuda.so.1", RTLD_NOW); if (!lib) { printf("no libcuda\n"); return 1; }
  LOAD(cuInit); LOAD(cuDeviceGet); LOAD(cuDevicePrimaryCtxRetain); LOAD(cuCtxSetCurrent);
  LOAD(cuStreamCreate); LOAD(cuEventCreate); LOAD(cuStreamBeginCapture_v2); LOAD(cuStreamEndCapture);
  LOAD(cuGraphDestroy); LOAD(cuEventRecord); LOAD(cuEventQuery); LOAD(cuStreamWaitEvent);
  LOAD(cuStreamSynchronize);
  int dev; CK(cuInit(0)); CK(cuDeviceGet(&dev, 0)); CK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CK(cuCtxSetCurrent(ctx)); CK(cuStreamCreate(&s, 1));
  P e, other; CK(cuEventCreate(&e, 2)); CK(cuStreamCreate(&other, 1));
  pthread_t t; pthread_create(&t, 0, thief, 0);
  long codes[1000] = {0}; int wait = !strcmp(mode, "wait"), query = strcmp(mode, "record");
  for (long i = 0; i < n; i++) {
    CUresult r = cuEventRecord(e, s); codes[r < 1000 ? r : 999]++;
    if (wait && r == 0) {
      if (cuStreamWaitEvent(other, e, 0) == 0) {
        // `other` may have joined a capture: leave it there and use a fresh stream.
        CUresult q = cuEventQuery(e);
        if (q == 0 || q == 600) cuStreamSynchronize(other); else CK(cuStreamCreate(&other, 1));
        continue;
      }
    }
    if (query) { CUresult q = cuEventQuery(e); codes[q < 1000 ? q : 999]++; }
  }
  atomic_store(&done, 1); pthread_join(t, 0);
  printf("mode %s%s: %ld iterations done; other thread began %ld captures, %ld graphs; result codes:", mode, keep ? " (graphs kept)" : "", n, begun, graphs);
  for (int c = 0; c < 1000; c++) if (codes[c]) printf(" %d x%ld", c, codes[c]);
  printf("\n");
  return 0;
}
