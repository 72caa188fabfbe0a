// A stand-in for the CUDA driver (libcuda.so.1) that runs nothing: every call returns at
// once, so that a program's own host work can be counted exactly (benches/host-overhead.sh).
// Stream capture is modelled far enough for streamgraph's checks: each capturing stream and
// each event recorded in a capture carry a dependency set; launches, copies, fills and host
// functions issued into a capture add a node depending on that set; a stream that waits for an
// event recorded in a capture joins it, and ending a capture that such a stream's work was not
// joined back from fails (CUDA_ERROR_STREAM_CAPTURE_UNJOINED); a query of an event recorded in
// a capture fails as the driver's does; a thread with a capture of its own not begun relaxed
// may make no stream synchronize or query, synchronous allocation or free (cuThreadExchangeStreamCaptureMode
// relaxes it); graphs list their nodes
// (in creation order) and edges. Handles are heap objects; kernel nodes remember their
// function. Conditional nodes (CUDA 12.4+: IF and WHILE; 12.8+: SWITCH, with `size` bodies)
// are nodes of type 13 with fresh, empty body graphs,
// into which a stream can capture (cuStreamBeginCaptureToGraph), so that captures of device
// blocks can be verified without a GPU (tests/capture_random_blocks.rs, .ci/run). Nothing here
// is a CUDA semantics reference beyond that.
//
//   cc -O2 -shared -fPIC -o libcuda.so.1 cuda.c
#ifdef THREADSAFE
#define _GNU_SOURCE
#endif
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <stdio.h>
#include <pthread.h>
// Built with -DTHREADSAFE (the tests' build, .ci/stand-in-tests), every call holds one
// process-wide recursive lock, so that tests may call from several threads; the instruction
// counts (benches/host-overhead.sh) are taken without it.
#ifdef THREADSAFE
#include <pthread.h>
static pthread_mutex_t mu = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static void unlock(int* g){ (void)g; pthread_mutex_unlock(&mu); }
static int lock(void){ pthread_mutex_lock(&mu); return 0; }
#define GUARD __attribute__((cleanup(unlock))) int guard_ = lock(); (void)guard_
#else
#define GUARD (void)0
#endif
typedef int CUresult;
#define OK 0
// Dependencies one node or stream may have; nodes come from a ring of ARENA slots (a graph
// lives far shorter than a million launches). Random programs need more dependencies per node
// than benchmarks do: tests build with -DMAXDEP=64 -DARENA=131072.
#ifndef MAXDEP
#define MAXDEP 8
#endif
#ifndef ARENA
#define ARENA (1 << 20)
#endif
typedef struct node { int idx; int type; void* func; uint64_t ptr; unsigned mark; int ndeps; struct node* deps[MAXDEP]; } node;
typedef struct graph { int n, cap; node** nodes; } graph;
// A capture remembers the streams that joined it by waiting for an event recorded in it.
typedef struct capture { graph* g; int ended; int invalid; int nj; struct stream* joined[64]; int mode; unsigned long owner; } capture;
typedef struct stream { capture* c; int ndeps; node* deps[MAXDEP]; } stream;
typedef struct event { capture* c; int ndeps; node* deps[MAXDEP]; } event;
static void die(const char* m){ fprintf(stderr,"stub-driver: %s\n",m); abort(); }
static int active(stream* s){ return s && s->c && !s->c->ended; }
static node* add_node(stream* s){
  if(!active(s)) return 0;
  graph* g=s->c->g;
  static node* arena; static size_t at; if(!arena) arena=malloc(sizeof(node)*ARENA); node* n=&arena[at++ & (ARENA-1)]; n->idx=g->n; n->type=0;
  n->ndeps=s->ndeps; memcpy(n->deps,s->deps,sizeof(node*)*s->ndeps);
  if(g->n==g->cap){ g->cap=g->cap?g->cap*2:64; g->nodes=realloc(g->nodes,sizeof(node*)*g->cap); }
  g->nodes[g->n++]=n; s->ndeps=1; s->deps[0]=n; return n;
}
static void join(stream* s, int nd, node** d){
  for(int i=0;i<nd;i++){ int f=0; for(int j=0;j<s->ndeps;j++) if(s->deps[j]==d[i]) f=1;
    if(!f){ if(s->ndeps>=MAXDEP) die("too many deps"); s->deps[s->ndeps++]=d[i]; } }
}
CUresult cuInit(unsigned f){GUARD;return OK;}
// STUB_CUDA_VERSION=12060 stands in for a driver older than CUDA 12.8 (no SWITCH nodes).
CUresult cuDriverGetVersion(int* v){GUARD;const char* e=getenv("STUB_CUDA_VERSION"); *v=e?atoi(e):13000; return OK;}
CUresult cuDeviceGetCount(int* c){GUARD;*c=1;return OK;}
CUresult cuDeviceGet(int* d,int o){GUARD;*d=0;return OK;}
CUresult cuDeviceGetAttribute(int* v,int a,int d){GUARD;*v=1;return OK;}
// Tests recognise the stand-in by its device name (tests/soundness_edges.rs).
CUresult cuDeviceGetName(char* n,int len,int d){GUARD;strncpy(n,"Fake",len);return OK;}
CUresult cuDeviceTotalMem_v2(size_t* b,int d){GUARD;*b=1ull<<36;return OK;}
CUresult cuDeviceComputeCapability(int* a,int* b,int d){GUARD;*a=9;*b=0;return OK;}
static int ctxobj; static void* cur=0;
CUresult cuDevicePrimaryCtxRetain(void** c,int d){GUARD;*c=&ctxobj;return OK;}
CUresult cuDevicePrimaryCtxRelease_v2(int d){GUARD;return OK;}
CUresult cuCtxSetCurrent(void* c){GUARD;cur=c;return OK;}
CUresult cuCtxGetCurrent(void** c){GUARD;*c=cur;return OK;}
CUresult cuCtxGetDevice(int* d){GUARD;*d=0;return OK;}
CUresult cuCtxPushCurrent_v2(void* c){GUARD;cur=c;return OK;}
CUresult cuCtxPopCurrent_v2(void** c){GUARD;if(c)*c=cur;return OK;}
CUresult cuCtxSynchronize(void);
CUresult cuCtxGetStreamPriorityRange(int* lo,int* hi){GUARD;*lo=0;*hi=-5;return OK;}
CUresult cuCtxGetFlags(unsigned* f){GUARD;*f=0;return OK;}
CUresult cuCtxSetFlags(unsigned f){GUARD;return OK;}
CUresult cuStreamCreate(stream** s,unsigned f){GUARD;*s=calloc(1,sizeof(stream));return OK;}
CUresult cuStreamCreateWithPriority(stream** s,unsigned f,int p){GUARD;*s=calloc(1,sizeof(stream));return OK;}
// A stream in a capture that has not ended (its own, or one it joined) must not be destroyed:
// the capture still refers to it. The stand-in stops the program there.
CUresult cuStreamDestroy_v2(stream* s){GUARD;
  if(active(s)) die("cuStreamDestroy of a stream in a capture that has not ended");
  free(s);return OK;}
CUresult cuStreamGetPriority(stream* s,int* p){GUARD;*p=0;return OK;}

// Querying or synchronizing a capturing stream is illegal and invalidates its capture.
static CUresult illegal(stream* s){ if(active(s)){ s->c->invalid=1; return 900; } return OK; }
// Captures not ended, with the mode they began in (0 global, 1 thread-local, 2 relaxed) and
// the thread that began them. A thread with one of its own not begun relaxed may make no
// "potentially unsafe" call (a synchronize or query of another stream, a synchronize of the
// context, a synchronous allocation or free) unless its interaction mode
// (cuThreadExchangeStreamCaptureMode) is relaxed: the call fails
// CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidates that capture, as the driver's does (a
// stream's synchronize and query seen on an H100, driver 580). Other threads' global captures
// are not modelled.
static capture* live[256]; static int nlive;
static __thread int tmode;
static unsigned long self_id(void){ return (unsigned long)pthread_self(); }
static void begun(capture* c,int mode){ c->mode=mode; c->owner=self_id(); if(nlive<256) live[nlive++]=c; }
static void ended(capture* c){ for(int i=0;i<nlive;i++) if(live[i]==c){ live[i]=live[--nlive]; break; } }
static CUresult unsafe_call(void){
  if(tmode==2) return OK;
  unsigned long me=self_id();
  for(int i=0;i<nlive;i++){ capture* c=live[i]; if(c->owner==me && c->mode!=2){ c->invalid=1; return 900; } }
  return OK;}
CUresult cuThreadExchangeStreamCaptureMode(int* m){GUARD;int old=tmode;tmode=*m;*m=old;return OK;}
CUresult cuCtxSynchronize(void){GUARD;return unsafe_call();}
CUresult cuStreamBeginCapture_v2(stream* s,int mode){GUARD;
  if(active(s)) return 401;
  capture* c=calloc(1,sizeof(capture)); c->g=calloc(1,sizeof(graph)); s->c=c; s->ndeps=0; begun(c,mode); return OK;}
CUresult cuStreamSynchronize(stream* s){GUARD;return active(s)?illegal(s):unsafe_call();}
CUresult cuStreamQuery(stream* s){GUARD;return active(s)?illegal(s):unsafe_call();}
// A stream that joined the capture and is not joined back (the origin does not depend on its
// work) fails the end: CUDA_ERROR_STREAM_CAPTURE_UNJOINED, and no graph.
static unsigned gen;
static int reaches(int nd, node** d, node* t){
  for(int i=0;i<nd;i++){ node* n=d[i]; if(n==t) return 1; if(n->mark==gen) continue; n->mark=gen;
    if(reaches(n->ndeps,n->deps,t)) return 1; }
  return 0;
}
static int unjoined(stream* s){
  capture* c=s->c;
  for(int i=0;i<c->nj;i++){ stream* j=c->joined[i]; if(j==s || j->c!=c) continue;
    for(int k=0;k<j->ndeps;k++){ gen++; if(!reaches(s->ndeps,s->deps,j->deps[k])) return 1; } }
  return 0;
}
CUresult cuStreamEndCapture(stream* s,graph** g){GUARD;
  if(!active(s)) return 900; int bad=s->c->invalid?901:(unjoined(s)?904:0); *g=bad?0:s->c->g; s->c->ended=1; ended(s->c); s->c=0; s->ndeps=0;
  return bad;}
CUresult cuStreamIsCapturing(stream* s,int* st){GUARD;*st=active(s)?(s->c->invalid?2:1):0;return OK;}
CUresult cuStreamGetCaptureInfo_v3(stream* s,int* st,unsigned long long* id,graph** g,node*** deps,void** ed,size_t* n){GUARD;
  *st=active(s)?(s->c->invalid?2:1):0; if(id)*id=(uintptr_t)(s->c);
  if(g)*g=active(s)?s->c->g:0; if(deps)*deps=s->deps; if(ed)*ed=0; if(n)*n=active(s)?s->ndeps:0; return OK;}
// A capturing stream that waits for an event recorded outside its capture would cross the
// capture's boundary: CUDA_ERROR_STREAM_CAPTURE_ISOLATION, and the capture is invalidated.
CUresult cuStreamWaitEvent(stream* s,event* e,unsigned f){GUARD;
  if(active(s) && e->c!=s->c){ s->c->invalid=1; return 905; }
  if(e->c && !e->c->ended){ if(!active(s)){ s->c=e->c; s->ndeps=0; if(s->c->nj<64) s->c->joined[s->c->nj++]=s; } join(s,e->ndeps,e->deps); }
  return OK;}
CUresult cuEventCreate(event** e,unsigned f){GUARD;*e=calloc(1,sizeof(event));return OK;}
CUresult cuEventDestroy_v2(event* e){GUARD;free(e);return OK;}
CUresult cuEventRecord(event* e,stream* s){GUARD;
  if(active(s)){ e->c=s->c; e->ndeps=s->ndeps; memcpy(e->deps,s->deps,sizeof(node*)*s->ndeps);} else e->c=0; return OK;}
CUresult cuEventSynchronize(event* e){GUARD;return OK;}
// An event recorded in a capture: CUDA_ERROR_CAPTURED_EVENT while it lasts, then
// CUDA_ERROR_INVALID_VALUE (as the driver answers).
CUresult cuEventQuery(event* e){GUARD;if(e->c) return e->c->ended?1:907; return OK;}
CUresult cuEventElapsedTime_v2(float* ms,event* a,event* b){GUARD;*ms=0.001f;return OK;}
CUresult cuEventElapsedTime(float* ms,event* a,event* b){GUARD;*ms=0.001f;return OK;}
static int modobj, funcobj[64]; static int nf=0;
CUresult cuModuleLoadData(void** m,const void* img){GUARD;*m=&modobj;return OK;}
CUresult cuModuleLoadDataEx(void** m,const void* img,unsigned n,void* o,void* v){GUARD;*m=&modobj;return OK;}
CUresult cuModuleUnload(void* m){GUARD;return OK;}
CUresult cuModuleGetFunction(void** f,void* m,const char* name){GUARD;*f=&funcobj[(nf++)%64];return OK;}
CUresult cuFuncGetAttribute(int* v,int a,void* f){GUARD;*v=0;return OK;}
CUresult cuFuncSetAttribute(void* f,int a,int v){GUARD;return OK;}
// With STUB_CUDA_THRASH_KIB=N in the environment, each launch first writes N KiB of memory of
// its own, so that the caller's next statement runs with cold caches, as after a library call
// (probes of the lines a statement touches; nothing else sets it).
static void thrash(void){
  static long kib=-1; static volatile char* mem;
  if(kib<0){ const char* e=getenv("STUB_CUDA_THRASH_KIB"); kib=e?atol(e):0; if(kib>0) mem=malloc(kib*1024); if(!mem) kib=0; }
  for(long i=0;i<kib*1024;i+=64) mem[i]++;
}
CUresult cuLaunchKernel(void* f,unsigned a,unsigned b,unsigned c,unsigned d,unsigned e,unsigned g,unsigned sh,stream* s,void** p,void** x){GUARD;thrash(); node* n=add_node(s); if(n){n->type=0;n->func=f;} return OK;}
CUresult cuLaunchHostFunc(stream* s,void* fn,void* d){GUARD;node* n=add_node(s); if(n)n->type=3; return OK;}
static uint64_t nextptr=0x10000000;
static void fresh(uint64_t* p,size_t b){ *p=nextptr; nextptr+=(b+4095)&~4095ull; }
CUresult cuMemAlloc_v2(uint64_t* p,size_t b){GUARD;CUresult r=unsafe_call(); if(r) return r; fresh(p,b);return OK;}
// Stream-ordered allocation: in a capture, a memory-allocation (10) or memory-free (11) node
// that remembers its address (a temporary's nodes, verified by address).
CUresult cuMemAllocAsync(uint64_t* p,size_t b,stream* s){GUARD;fresh(p,b); if(active(s)){node* n=add_node(s); if(n){n->type=10;n->ptr=*p;}} return OK;}
CUresult cuMemFree_v2(uint64_t p){GUARD;return unsafe_call();}
// Virtual memory management: a reservation is a range of fresh addresses, physical memory a
// handle; mapping checks nothing (a graph set's temporaries, `ffi/arena.rs`).
CUresult cuMemGetAllocationGranularity(size_t* g,const void* prop,int option){GUARD;*g=2u<<20;return OK;}
CUresult cuMemAddressReserve(uint64_t* p,size_t b,size_t align,uint64_t addr,unsigned long long f){GUARD;nextptr=(nextptr+(2u<<20)-1)&~((2ull<<20)-1);*p=nextptr;nextptr+=b;return OK;}
CUresult cuMemAddressFree(uint64_t p,size_t b){GUARD;return OK;}
static unsigned long long memhandles;
CUresult cuMemCreate(unsigned long long* h,size_t b,const void* prop,unsigned long long f){GUARD;*h=++memhandles;return OK;}
CUresult cuMemRelease(unsigned long long h){GUARD;return OK;}
CUresult cuMemMap(uint64_t p,size_t b,size_t off,unsigned long long h,unsigned long long f){GUARD;return OK;}
CUresult cuMemUnmap(uint64_t p,size_t b){GUARD;return OK;}
CUresult cuMemSetAccess(uint64_t p,size_t b,const void* desc,size_t n){GUARD;return OK;}
CUresult cuMemFreeAsync(uint64_t p,stream* s){GUARD;if(active(s)){node* n=add_node(s); if(n){n->type=11;n->ptr=p;}} return OK;}
// CUDA_MEM_ALLOC_NODE_PARAMS (CUDA 12.6+): `dptr` at offset 112.
CUresult cuGraphMemAllocNodeGetParams(node* nd,char* p){GUARD;*(uint64_t*)(p+112)=nd->ptr;return OK;}
CUresult cuGraphMemFreeNodeGetParams(node* nd,uint64_t* p){GUARD;*p=nd->ptr;return OK;}
static int poolobj;
CUresult cuDeviceGetDefaultMemPool(void** pool,int d){GUARD;*pool=&poolobj;return OK;}
CUresult cuMemPoolSetAttribute(void* pool,int a,void* v){GUARD;return OK;}
CUresult cuDeviceGetGraphMemAttribute(int d,int a,uint64_t* v){GUARD;*v=0;return OK;}
CUresult cuDeviceSetGraphMemAttribute(int d,int a,uint64_t* v){GUARD;return OK;}
CUresult cuDeviceGraphMemTrim(int d){GUARD;return OK;}
CUresult cuMemHostAlloc(void** p,size_t b,unsigned f){GUARD;*p=malloc(b?b:1);return OK;}
CUresult cuMemFreeHost(void* p){GUARD;free(p);return OK;}
CUresult cuMemGetInfo_v2(size_t* f,size_t* t){GUARD;*f=1ull<<35;*t=1ull<<36;return OK;}
CUresult cuMemcpyHtoDAsync_v2(uint64_t d,const void* h,size_t b,stream* s){GUARD;node* n=add_node(s); if(n)n->type=1; return OK;}
// Outside a capture the host side is written (zeros), so that what is read back is defined.
CUresult cuMemcpyDtoHAsync_v2(void* h,uint64_t d,size_t b,stream* s){GUARD;node* n=add_node(s); if(n)n->type=1; else memset(h,0,b); return OK;}
CUresult cuMemcpyDtoDAsync_v2(uint64_t d,uint64_t s2,size_t b,stream* s){GUARD;node* n=add_node(s); if(n)n->type=1; return OK;}
CUresult cuMemcpyAsync(uint64_t d,uint64_t s2,size_t b,stream* s){GUARD;node* n=add_node(s); if(n)n->type=1; return OK;}
CUresult cuMemcpyDtoH_v2(void* h,uint64_t d,size_t b){GUARD;memset(h,0,b);return OK;}
CUresult cuMemcpyHtoD_v2(uint64_t d,const void* h,size_t b){GUARD;return OK;}
CUresult cuMemsetD8Async(uint64_t d,unsigned char v,size_t cnt,stream* s){GUARD;node* n=add_node(s); if(n)n->type=2; return OK;}
CUresult cuMemsetD16Async(uint64_t d,unsigned short v,size_t cnt,stream* s){GUARD;node* n=add_node(s); if(n)n->type=2; return OK;}
CUresult cuMemsetD32Async(uint64_t d,unsigned v,size_t cnt,stream* s){GUARD;node* n=add_node(s); if(n)n->type=2; return OK;}
CUresult cuGraphGetNodes(graph* g,node** out,size_t* n){GUARD;
  if(!out){*n=g->n;return OK;} size_t k=*n<(size_t)g->n?*n:(size_t)g->n; for(size_t i=0;i<k;i++) out[i]=g->nodes[i]; *n=g->n; return OK;}
CUresult cuGraphGetEdges_v2(graph* g,node** from,node** to,void* ed,size_t* n){GUARD;
  size_t total=0; for(int i=0;i<g->n;i++) total+=g->nodes[i]->ndeps;
  if(!from){*n=total;return OK;}
  size_t k=0; for(int i=0;i<g->n;i++) for(int j=0;j<g->nodes[i]->ndeps;j++){ if(k<*n){from[k]=g->nodes[i]->deps[j];to[k]=g->nodes[i];} k++; }
  if(ed) memset(ed,0,8*(*n<k?*n:k)); *n=total; return OK;}
CUresult cuGraphNodeGetDependencies_v2(node* nd,node** out,void* ed,size_t* n){GUARD;
  if(!out){*n=nd->ndeps;return OK;} for(int i=0;i<nd->ndeps&&i<(int)*n;i++) out[i]=nd->deps[i]; *n=nd->ndeps; return OK;}
CUresult cuGraphNodeGetType(node* nd,int* t){GUARD;*t=nd->type;return OK;}
CUresult cuGraphKernelNodeGetParams_v2(node* nd,void** p){GUARD;p[0]=nd->func;return OK;}
CUresult cuGraphDestroy(graph* g){GUARD;free(g->nodes); free(g); return OK;}
static int execobj;
CUresult cuGraphInstantiateWithFlags(void** e,graph* g,unsigned long long f){GUARD;*e=malloc(16);return OK;}
CUresult cuGraphExecDestroy(void* e){GUARD;free(e);return OK;}
CUresult cuGraphLaunch(void* e,stream* s){GUARD;return OK;}
CUresult cuGraphUpload(void* e,stream* s){GUARD;return OK;}
typedef struct { int result; node* errorNode; node* errorFromNode; } upd;
CUresult cuGraphExecUpdate_v2(void* e,graph* g,upd* info){GUARD; if(info){info->result=0;info->errorNode=0;info->errorFromNode=0;} return OK;}
CUresult cuGraphExecKernelNodeSetParams_v2(void* e,node* n,const void* p){GUARD;return OK;}
CUresult cuGraphCreate(graph** g,unsigned f){GUARD;*g=calloc(1,sizeof(graph));return OK;}
CUresult cuGetErrorString(CUresult r,const char** s){GUARD;*s="stub-driver error";return OK;}
CUresult cuGetErrorName(CUresult r,const char** s){GUARD;*s="CUDA_ERROR_STUB_DRIVER";return OK;}
// Conditional nodes: a handle is a number; the node's body graphs are new graphs (never freed:
// they live as long as a test process does); a stream may capture into any graph.
static unsigned long long handles;
CUresult cuGraphConditionalHandleCreate(unsigned long long* h,graph* g,void* ctx,unsigned def,unsigned f){GUARD;*h=++handles;return OK;}
// CUgraphNodeParams: the node type at offset 0, the parameters from offset 16; a conditional
// node's (CUDA_CONDITIONAL_NODE_PARAMS) body count at 16 + 12 and body array out-pointer at 16 + 16.
CUresult cuGraphAddNode_v2(node** out,graph* g,node** d,void* ed,size_t nd,void* params){GUARD;
  if(nd>MAXDEP) die("too many deps");
  // A stand-in stream capturing into `g` with dependencies `d` adds the node.
  capture c={g,0}; stream s={&c,(int)nd}; memcpy(s.deps,d,sizeof(node*)*nd);
  node* n=add_node(&s); n->type=*(int*)params;
  if(n->type==13){ char* p=(char*)params+16; unsigned size=*(unsigned*)(p+12);
    graph** bodies=calloc(size?size:1,sizeof(graph*)); for(unsigned i=0;i<size;i++) bodies[i]=calloc(1,sizeof(graph));
    *(graph***)(p+16)=bodies; }
  *out=n; return OK;}
CUresult cuGraphAddEmptyNode(node** out,graph* g,node** d,size_t nd){GUARD;
  if(nd>MAXDEP) die("too many deps");
  capture c={g,0}; stream s={&c,(int)nd}; memcpy(s.deps,d,sizeof(node*)*nd);
  node* n=add_node(&s); n->type=5; *out=n; return OK;}
CUresult cuStreamUpdateCaptureDependencies_v2(stream* s,node** d,void* ed,size_t nd,unsigned f){GUARD;
  if(!active(s)) return 900; if(f==1) s->ndeps=0; join(s,(int)nd,d); return OK;}
CUresult cuStreamBeginCaptureToGraph(stream* s,graph* g,node** d,void* ed,size_t nd,int mode){GUARD;
  if(active(s)) return 401;
  capture* c=calloc(1,sizeof(capture)); c->g=g; s->c=c; s->ndeps=0; begun(c,mode); join(s,(int)nd,d); return OK;}
