// What the driver allows a thread that began a capture of its own (thread-local mode) on one
// stream, on other streams, and what relaxing the thread's capture mode changes: the CUDA
// driver API alone (loaded with dlopen; no CUDA headers, no streamgraph, no cudarc).
//
//   cc -O2 -o beside_capture benches/driver-repro/beside_capture.c -ldl
//   ./beside_capture
//
// For each call it prints the call's result and the capture's state after it (ended with
// cuStreamEndCapture: 0 for a graph, 901 CUDA_ERROR_STREAM_CAPTURE_INVALIDATED when the call
// broke the capture), first as the thread is, then with the call between two
// cuThreadExchangeStreamCaptureMode swaps to relaxed mode and back. The calls are the ones
// streamgraph's standalone work makes on other streams: a stream query (a lane taken over),
// an event query of a record on another stream (a fork's check), a stream synchronize (a
// join's fallback), and an event query of a record the capture took (how a fork finds itself
// captured: 907 CUDA_ERROR_CAPTURED_EVENT expected, in either mode). The stand-in driver
// (benches/stub-driver/cuda.c) refuses the first and the third to such a thread unless relaxed
// (900 CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, the capture ended 901), and does not refuse the
// second: this program says whether the driver agrees. Not yet run on a GPU. If the driver
// refuses the event query as it does the stream query, standalone work beside a thread's own
// capture breaks that capture at its fork's check, and soundness_edges'
// `standalone_work_beside_a_threads_own_capture_leaves_it_alone` fails at its fills.
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
typedef int CUresult; typedef void* P;
static CUresult (*cuInit)(unsigned); static CUresult (*cuDeviceGet)(int*, int);
static CUresult (*cuDevicePrimaryCtxRetain)(P*, int); static CUresult (*cuCtxSetCurrent)(P);
static CUresult (*cuStreamCreate)(P*, unsigned); static CUresult (*cuEventCreate)(P*, unsigned);
static CUresult (*cuStreamBeginCapture_v2)(P, int); static CUresult (*cuStreamEndCapture)(P, P*);
static CUresult (*cuGraphDestroy)(P); static CUresult (*cuEventRecord)(P, P);
static CUresult (*cuEventQuery)(P); static CUresult (*cuStreamQuery)(P);
static CUresult (*cuStreamSynchronize)(P); static CUresult (*cuThreadExchangeStreamCaptureMode)(int*);
#define LOAD(n) do { *(void**)&n = dlsym(lib, #n); if (!n) { printf("no %s\n", #n); return 1; } } while (0)
#define CK(x) do { CUresult r_ = (x); if (r_) { printf("%s: %d\n", #x, r_); exit(2); } } while (0)
enum { GLOBAL = 0, THREAD_LOCAL = 1, RELAXED = 2 };
static P captured, other, e_other, e_captured;

// One call by name, on the streams and events above.
static CUresult call(const char* what) {
  if (!strcmp(what, "stream query")) return cuStreamQuery(other);
  if (!strcmp(what, "event query")) return cuEventQuery(e_other);
  if (!strcmp(what, "stream synchronize")) return cuStreamSynchronize(other);
  if (!strcmp(what, "captured event query")) return cuEventQuery(e_captured);
  return -1;
}

// Begins a thread-local capture on `captured` (with one event record in it), makes `what`
// (relaxed around it when `relax`), ends the capture; prints both results.
static void probe(const char* what, int relax) {
  CK(cuEventRecord(e_other, other));
  CK(cuStreamSynchronize(other));
  CK(cuStreamBeginCapture_v2(captured, THREAD_LOCAL));
  CK(cuEventRecord(e_captured, captured));
  int mode = RELAXED;
  if (relax) CK(cuThreadExchangeStreamCaptureMode(&mode));
  CUresult r = call(what);
  if (relax) CK(cuThreadExchangeStreamCaptureMode(&mode));
  P g = 0;
  CUresult ended = cuStreamEndCapture(captured, &g);
  if (g) cuGraphDestroy(g);
  printf("%-22s %-8s call %4d  capture ended %4d\n", what, relax ? "relaxed" : "as is", r, ended);
}

int main(void) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW); if (!lib) { printf("no libcuda\n"); return 1; }
  LOAD(cuInit); LOAD(cuDeviceGet); LOAD(cuDevicePrimaryCtxRetain); LOAD(cuCtxSetCurrent);
  LOAD(cuStreamCreate); LOAD(cuEventCreate); LOAD(cuStreamBeginCapture_v2); LOAD(cuStreamEndCapture);
  LOAD(cuGraphDestroy); LOAD(cuEventRecord); LOAD(cuEventQuery); LOAD(cuStreamQuery);
  LOAD(cuStreamSynchronize); LOAD(cuThreadExchangeStreamCaptureMode);
  int dev; P ctx; CK(cuInit(0)); CK(cuDeviceGet(&dev, 0)); CK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CK(cuCtxSetCurrent(ctx));
  CK(cuStreamCreate(&captured, 1)); CK(cuStreamCreate(&other, 1));
  CK(cuEventCreate(&e_other, 2)); CK(cuEventCreate(&e_captured, 2));
  const char* calls[] = {"stream query", "event query", "stream synchronize", "captured event query"};
  for (int i = 0; i < 4; i++) {
    probe(calls[i], 0);
    probe(calls[i], 1);
  }
  return 0;
}
