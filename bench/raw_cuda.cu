// Raw CUDA baselines: what a careful programmer writes with the CUDA runtime
// API alone. One non-blocking stream and one timing-free event per context
// (plus two timing events, and extra streams on request), cudaLaunchKernel
// of the same __global__ functions weft launches (from kernels.cu and
// demo_kernels.cu), and every CUDA call checked, with the call, the error's
// name and text, and the file and line kept for the report.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>

#include "demo_kernels.h"
#include "kernels.h"
#include "raw.h"
#include "raw_check_cuda.h"

namespace {

struct raw_cuda {
  bench_raw base;
  int dev;
  cudaStream_t stream;
  cudaEvent_t done;
  cudaEvent_t t_start, t_final; // timing: copy_timed, normalize
  cudaStream_t *extra;          // one per thread of tasks_threads
  cudaEvent_t *extra_end;       // one per extra stream, to join it back
  int nextra;
  pthread_mutex_t lock; // err, from the threads of tasks_threads
};

raw_cuda *of(bench_raw *r) { return reinterpret_cast<raw_cuda *>(r); }

int raw_open(weft_runtime *rt, bench_raw **out, char *err, size_t errlen) {
  (void)rt; // weft's device 0 is CUDA device 0
  raw_cuda *x = static_cast<raw_cuda *>(calloc(1, sizeof(raw_cuda)));
  if (!x) {
    snprintf(err, errlen, "raw CUDA: out of memory");
    return -1;
  }
  x->base.ops = &bench_raw_cuda;
  x->dev = 0;
  pthread_mutex_init(&x->lock, NULL);
  int made = 0; // how many of stream, done, t_start, t_final exist
  cudaError_t e = cudaSetDevice(x->dev);
  const char *call = "cudaSetDevice(0)";
  if (e == cudaSuccess) {
    call = "cudaStreamCreateWithFlags(cudaStreamNonBlocking)";
    e = cudaStreamCreateWithFlags(&x->stream, cudaStreamNonBlocking);
  }
  if (e == cudaSuccess) {
    made = 1;
    call = "cudaEventCreateWithFlags(cudaEventDisableTiming)";
    e = cudaEventCreateWithFlags(&x->done, cudaEventDisableTiming);
  }
  if (e == cudaSuccess) {
    made = 2;
    call = "cudaEventCreate(start)";
    e = cudaEventCreate(&x->t_start);
  }
  if (e == cudaSuccess) {
    made = 3;
    call = "cudaEventCreate(final)";
    e = cudaEventCreate(&x->t_final);
  }
  if (e != cudaSuccess) {
    raw_record(err, errlen, e, call, __FILE__, __LINE__);
    if (made >= 3)
      cudaEventDestroy(x->t_start);
    if (made >= 2)
      cudaEventDestroy(x->done);
    if (made >= 1)
      cudaStreamDestroy(x->stream);
    pthread_mutex_destroy(&x->lock);
    free(x);
    return -1;
  }
  *out = &x->base;
  return 0;
}

void raw_close(bench_raw *r) {
  raw_cuda *x = of(r);
  // Errors here would only repeat one already reported by a checked call.
  cudaSetDevice(x->dev);
  cudaStreamSynchronize(x->stream);
  for (int i = 0; i < x->nextra; i++) {
    cudaStreamSynchronize(x->extra[i]);
    cudaEventDestroy(x->extra_end[i]);
    cudaStreamDestroy(x->extra[i]);
  }
  free(x->extra);
  free(x->extra_end);
  cudaEventDestroy(x->t_final);
  cudaEventDestroy(x->t_start);
  cudaEventDestroy(x->done);
  cudaStreamDestroy(x->stream);
  pthread_mutex_destroy(&x->lock);
  free(x);
}

int raw_streams(bench_raw *r, int n) {
  raw_cuda *x = of(r);
  if (n <= x->nextra)
    return 0;
  cudaStream_t *v = static_cast<cudaStream_t *>(
      realloc(x->extra, (size_t)n * sizeof(cudaStream_t)));
  if (v)
    x->extra = v;
  cudaEvent_t *ev = static_cast<cudaEvent_t *>(
      realloc(x->extra_end, (size_t)n * sizeof(cudaEvent_t)));
  if (ev)
    x->extra_end = ev;
  if (!v || !ev) {
    snprintf(x->base.err, sizeof x->base.err, "raw CUDA: out of memory");
    return -1;
  }
  CK(cudaSetDevice(x->dev));
  for (; x->nextra < n; x->nextra++) {
    int i = x->nextra;
    CK(cudaStreamCreateWithFlags(&x->extra[i], cudaStreamNonBlocking));
    cudaError_t e =
        cudaEventCreateWithFlags(&x->extra_end[i], cudaEventDisableTiming);
    if (e != cudaSuccess) {
      cudaStreamDestroy(x->extra[i]);
      return raw_record(x->base.err, sizeof x->base.err, e,
                        "cudaEventCreateWithFlags", __FILE__, __LINE__);
    }
  }
  return 0;
}

int raw_launch(bench_raw *r, int n, unsigned *counter) {
  raw_cuda *x = of(r);
  void *args[] = {&counter};
  for (int i = 0; i < n; i++)
    CK(cudaLaunchKernel(bench_cuda_tick, dim3(1), dim3(1), args, 0, x->stream));
  return 0;
}

int raw_sync(bench_raw *r) {
  raw_cuda *x = of(r);
  CK(cudaStreamSynchronize(x->stream));
  return 0;
}

// The pattern weft's waits are built on: record, then poll the event.
int raw_roundtrip(bench_raw *r, int n, unsigned *counter) {
  raw_cuda *x = of(r);
  void *args[] = {&counter};
  for (int i = 0; i < n; i++) {
    CK(cudaLaunchKernel(bench_cuda_tick, dim3(1), dim3(1), args, 0, x->stream));
    CK(cudaEventRecord(x->done, x->stream));
    cudaError_t e;
    while ((e = cudaEventQuery(x->done)) == cudaErrorNotReady) {
    }
    CK(e);
  }
  return 0;
}

// One task's work on stream s, waited for. Returns 0 or -1 with err set.
int one_task(raw_cuda *x, cudaStream_t s, const bench_task_set *t, int i,
             char *err, size_t errlen) {
  size_t bytes = (size_t)t->n * sizeof(unsigned);
  unsigned blocks = bench_affine_blocks(t->n);
  unsigned mul = t->mul, add = t->add[i], n = t->n;
  void *args[] = {&t->in_d[i], &t->out_d[i], &mul, &add, &n};
  cudaError_t e;
#define TK(call)                                                               \
  do {                                                                         \
    if ((e = (call)) != cudaSuccess)                                           \
      return raw_record(err, errlen, e, #call, __FILE__, __LINE__);            \
  } while (0)
  TK(cudaMemcpyAsync(t->in_d[i], t->in_h[i], bytes, cudaMemcpyHostToDevice, s));
  TK(cudaLaunchKernel(bench_cuda_affine, dim3(blocks), dim3(BENCH_THREADS),
                      args, 0, s));
  TK(cudaMemcpyAsync(t->out_h[i], t->out_d[i], bytes, cudaMemcpyDeviceToHost,
                     s));
  TK(cudaStreamSynchronize(s));
#undef TK
  (void)x;
  return 0;
}

int raw_tasks_serial(bench_raw *r, const bench_task_set *t) {
  raw_cuda *x = of(r);
  CK(cudaSetDevice(x->dev));
  for (int i = 0; i < t->ntasks; i++)
    if (one_task(x, x->stream, t, i, x->base.err, sizeof x->base.err))
      return -1;
  return 0;
}

struct thread_arg {
  raw_cuda *x;
  const bench_task_set *t;
  int i;
};

void *task_thread(void *p) {
  thread_arg *a = static_cast<thread_arg *>(p);
  raw_cuda *x = a->x;
  char err[sizeof x->base.err - 32]; // room for "thread N: "
  cudaError_t e = cudaSetDevice(x->dev);
  int rc =
      e == cudaSuccess
          ? one_task(x, x->extra[a->i], a->t, a->i, err, sizeof err)
          : raw_record(err, sizeof err, e, "cudaSetDevice", __FILE__, __LINE__);
  if (rc) {
    pthread_mutex_lock(&x->lock);
    if (!x->base.err[0])
      snprintf(x->base.err, sizeof x->base.err, "thread %d: %s", a->i, err);
    pthread_mutex_unlock(&x->lock);
  }
  return NULL;
}

int raw_tasks_threads(bench_raw *r, const bench_task_set *t) {
  raw_cuda *x = of(r);
  if (x->nextra < t->ntasks) {
    snprintf(x->base.err, sizeof x->base.err,
             "raw CUDA: %d streams made for %d threads", x->nextra, t->ntasks);
    return -1;
  }
  thread_arg *args =
      static_cast<thread_arg *>(calloc((size_t)t->ntasks, sizeof *args));
  pthread_t *th =
      static_cast<pthread_t *>(calloc((size_t)t->ntasks, sizeof *th));
  if (!args || !th) {
    free(args);
    free(th);
    snprintf(x->base.err, sizeof x->base.err, "raw CUDA: out of memory");
    return -1;
  }
  x->base.err[0] = '\0';
  int started = 0, rc = 0;
  for (; started < t->ntasks; started++) {
    args[started] = thread_arg{x, t, started};
    if (pthread_create(&th[started], NULL, task_thread, &args[started])) {
      snprintf(x->base.err, sizeof x->base.err,
               "pthread_create failed for thread %d", started);
      rc = -1;
      break;
    }
  }
  for (int i = 0; i < started; i++)
    pthread_join(th[i], NULL);
  free(args);
  free(th);
  return rc || x->base.err[0] ? -1 : 0;
}

int raw_pinned_alloc(bench_raw *r, size_t n, void **p) {
  raw_cuda *x = of(r);
  CK(cudaMallocHost(p, n));
  return 0;
}

int raw_pinned_free(bench_raw *r, void *p) {
  raw_cuda *x = of(r);
  CK(cudaFreeHost(p));
  return 0;
}

int raw_copy(bench_raw *r, void *dst, const void *src, size_t n,
             int to_device) {
  raw_cuda *x = of(r);
  CK(cudaMemcpyAsync(
      dst, src, n, to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost,
      x->stream));
  return 0;
}

int need_streams(raw_cuda *x, int n) {
  if (x->nextra >= n)
    return 0;
  snprintf(x->base.err, sizeof x->base.err,
           "raw CUDA: %d streams needed, %d made", n, x->nextra);
  return -1;
}

int raw_copy_timed(bench_raw *r, const bench_copy_pair *p, float *ms) {
  raw_cuda *x = of(r);
  if (p->d2h_bytes && need_streams(x, 1))
    return -1;
  CK(cudaEventRecord(x->t_start, x->stream));
  if (p->h2d_bytes)
    CK(cudaMemcpyAsync(p->h2d_dst, p->h2d_src, p->h2d_bytes,
                       cudaMemcpyHostToDevice, x->stream));
  if (p->d2h_bytes) {
    CK(cudaStreamWaitEvent(x->extra[0], x->t_start, 0));
    CK(cudaMemcpyAsync(p->d2h_dst, p->d2h_src, p->d2h_bytes,
                       cudaMemcpyDeviceToHost, x->extra[0]));
    CK(cudaEventRecord(x->extra_end[0], x->extra[0]));
    CK(cudaStreamWaitEvent(x->stream, x->extra_end[0], 0));
  }
  CK(cudaEventRecord(x->t_final, x->stream));
  CK(cudaEventSynchronize(x->t_final));
  CK(cudaEventElapsedTime(ms, x->t_start, x->t_final));
  return 0;
}

// One array's work of normalize on stream st.
int norm_array(raw_cuda *x, const bench_norm_set *s, int i, cudaStream_t st) {
  size_t bytes = (size_t)s->n * sizeof(float);
  unsigned long long n = s->n;
  unsigned blocks = s->blocks;
  void *reduce_args[] = {&s->dev_a[i], &s->dev_partial[i], &n};
  void *sum_args[] = {&s->dev_partial[i], &s->dev_sum[i], &blocks};
  void *divide_args[] = {&s->dev_a[i], &s->dev_sum[i], &n};
  CK(cudaMemcpyAsync(s->dev_a[i], s->in_h[i], bytes, cudaMemcpyHostToDevice,
                     st));
  CK(cudaLaunchKernel(weft_demo_cuda_partial_reduce, dim3(blocks),
                      dim3(DEMO_THREADS), reduce_args, 0, st));
  CK(cudaLaunchKernel(weft_demo_cuda_single_thread_sum, dim3(1), dim3(1),
                      sum_args, 0, st));
  CK(cudaLaunchKernel(weft_demo_cuda_divide_by, dim3(blocks),
                      dim3(DEMO_THREADS), divide_args, 0, st));
  CK(cudaMemcpyAsync(s->out_h[i], s->dev_a[i], bytes, cudaMemcpyDeviceToHost,
                     st));
  return 0;
}

int raw_normalize(bench_raw *r, const bench_norm_set *s, int nstreams,
                  float *ms) {
  raw_cuda *x = of(r);
  int many = nstreams > 1;
  if (many && need_streams(x, nstreams))
    return -1;
  CK(cudaSetDevice(x->dev));
  CK(cudaEventRecord(x->t_start, x->stream));
  for (int k = 0; many && k < nstreams; k++)
    CK(cudaStreamWaitEvent(x->extra[k], x->t_start, 0));
  for (int i = 0; i < s->narrays; i++)
    if (norm_array(x, s, i, many ? x->extra[i % nstreams] : x->stream))
      return -1;
  for (int k = 0; many && k < nstreams; k++) {
    CK(cudaEventRecord(x->extra_end[k], x->extra[k]));
    CK(cudaStreamWaitEvent(x->stream, x->extra_end[k], 0));
  }
  CK(cudaEventRecord(x->t_final, x->stream));
  CK(cudaEventSynchronize(x->t_final));
  CK(cudaEventElapsedTime(ms, x->t_start, x->t_final));
  return 0;
}

} // namespace

extern "C" const bench_raw_ops bench_raw_cuda = {
    raw_open,         raw_close,       raw_streams,      raw_launch,
    raw_sync,         raw_roundtrip,   raw_tasks_serial, raw_tasks_threads,
    raw_pinned_alloc, raw_pinned_free, raw_copy,         raw_copy_timed,
    raw_normalize,
};
