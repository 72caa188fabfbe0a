// A stand-in for NVRTC (libnvrtc.so.13) that compiles nothing: every program "compiles" to
// the same empty PTX text, which the stand-in driver (cuda.c) accepts as a module.
//
//   cc -O2 -shared -fPIC -o libnvrtc.so.13 nvrtc.c
#include <string.h>
#include <stdlib.h>
static const char PTX[]="// stub-driver PTX\n";
int nvrtcVersion(int* a,int* b){*a=13;*b=0;return 0;}
int nvrtcCreateProgram(void** p,const char* src,const char* name,int n,const char* const* h,const char* const* i){*p=malloc(8);return 0;}
int nvrtcDestroyProgram(void** p){free(*p);return 0;}
int nvrtcCompileProgram(void* p,int n,const char* const* o){return 0;}
int nvrtcGetPTXSize(void* p,size_t* s){*s=sizeof(PTX);return 0;}
int nvrtcGetPTX(void* p,char* out){memcpy(out,PTX,sizeof(PTX));return 0;}
int nvrtcGetProgramLogSize(void* p,size_t* s){*s=1;return 0;}
int nvrtcGetProgramLog(void* p,char* out){out[0]=0;return 0;}
const char* nvrtcGetErrorString(int r){return "stub-driver NVRTC error";}
int nvrtcAddNameExpression(void* p,const char* n){return 0;}
int nvrtcGetLoweredName(void* p,const char* n,const char** l){*l=n;return 0;}
int nvrtcGetCUBINSize(void* p,size_t* s){*s=0;return 0;}
int nvrtcGetCUBIN(void* p,char* out){return 0;}
int nvrtcGetSupportedArchs(int* a){a[0]=90;return 0;}
int nvrtcGetNumSupportedArchs(int* n){*n=1;return 0;}
