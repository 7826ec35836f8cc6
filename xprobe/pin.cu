// Temporary probe: cost of pinning pageable memory in place against staging.
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e3+t.tv_nsec*1e-6;}
__global__ void spin(long long cyc){long long s=clock64();while(clock64()-s<cyc){}}
#define CK(x) do{cudaError_t e=(x);if(e){printf("%s: %s\n",#x,cudaGetErrorString(e));}}while(0)
int main(void){
  cudaStream_t s; CK(cudaStreamCreateWithFlags(&s,cudaStreamNonBlocking));
  cudaStream_t k; CK(cudaStreamCreateWithFlags(&k,cudaStreamNonBlocking));
  size_t sizes[]={64ul<<20,256ul<<20,1ul<<30,2ul<<30};
  void *d; CK(cudaMalloc(&d,2ul<<30));
  void *pin; CK(cudaMallocHost(&pin,2ul<<30)); memset(pin,1,2ul<<30);
  for(int huge=0;huge<2;huge++)
  for(int i=0;i<4;i++){
    size_t n=sizes[i];
    char *p=(char*)aligned_alloc(2<<20,n);
    if(huge) madvise(p,n,MADV_HUGEPAGE); else madvise(p,n,MADV_NOHUGEPAGE);
    memset(p,2,n);
    double t0=now(); cudaError_t e=cudaHostRegister(p,n,cudaHostRegisterDefault); double t1=now();
    if(e){printf("register: %s\n",cudaGetErrorString(e));continue;}
    double t2=now(); CK(cudaMemcpyAsync(d,p,n,cudaMemcpyHostToDevice,s)); CK(cudaStreamSynchronize(s)); double t3=now();
    CK(cudaMemcpyAsync(p,d,n,cudaMemcpyDeviceToHost,s)); CK(cudaStreamSynchronize(s)); double t4=now();
    CK(cudaMemcpyAsync(d,pin,n,cudaMemcpyHostToDevice,s)); CK(cudaStreamSynchronize(s)); double t5=now();
    CK(cudaMemcpyAsync(pin,d,n,cudaMemcpyDeviceToHost,s)); CK(cudaStreamSynchronize(s)); double t6=now();
    double t7=now(); CK(cudaHostUnregister(p)); double t8=now();
    double gb=n/1e9;
    printf("%s %5zu MiB: register %.2f ms (%.1f GB/s) unregister %.2f ms | registered H2D %.1f D2H %.1f GB/s | pinned H2D %.1f D2H %.1f GB/s\n",
      huge?"THP  ":"4KiB ",n>>20,t1-t0,gb/(t1-t0)*1e3,t8-t7,gb/(t3-t2)*1e3,gb/(t4-t3)*1e3,gb/(t5-t4)*1e3,gb/(t6-t5)*1e3);
    free(p);
  }
  // does registering wait for a kernel on another stream?
  char *p=(char*)malloc(64<<20); memset(p,3,64<<20);
  int clk; cudaDeviceGetAttribute(&clk,cudaDevAttrClockRate,0);
  spin<<<1,1,0,k>>>((long long)clk*300); // ~300 ms
  double t0=now(); CK(cudaHostRegister(p,64<<20,0)); double t1=now();
  spin<<<1,1,0,k>>>((long long)clk*300);
  double t2=now(); CK(cudaHostUnregister(p)); double t3=now();
  CK(cudaStreamSynchronize(k));
  printf("beside a 300 ms kernel: register 64 MiB %.2f ms, unregister %.2f ms\n",t1-t0,t3-t2);
  // two registrations sharing a page
  char *q=(char*)aligned_alloc(4096,1<<20);
  CK(cudaHostRegister(q,1000,0)); e: ;
  cudaError_t e2=cudaHostRegister(q+1000,4096,0);
  printf("second registration in the same page: %s\n",cudaGetErrorString(e2)); cudaGetLastError();
  cudaPointerAttributes a; CK(cudaPointerGetAttributes(&a,q+500000)); printf("beyond registered range type %d\n",(int)a.type);
  CK(cudaPointerGetAttributes(&a,q+100)); printf("inside registered range type %d\n",(int)a.type);
  return 0;
}
