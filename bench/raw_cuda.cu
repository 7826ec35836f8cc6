// Raw CUDA baselines: what a careful programmer writes with the CUDA runtime
// API alone. One non-blocking stream and one timing-free event per context,
// cudaLaunchKernel of the same __global__ functions weft launches (from
// kernels.cu), and every CUDA call checked, with the call, the error's name
// and text, and the file and line kept for the report.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>

#include "kernels.h"
#include "raw.h"

namespace {

struct raw_cuda {
  bench_raw base;
  int dev;
  cudaStream_t stream;
  cudaEvent_t done;
  cudaStream_t *extra; // one per thread of tasks_threads
  int nextra;
  pthread_mutex_t lock; // err, from the threads of tasks_threads
};

raw_cuda *of(bench_raw *r) { return reinterpret_cast<raw_cuda *>(r); }

int record(char *err, size_t len, cudaError_t e, const char *call,
           const char *file, int line) {
  snprintf(err, len, "%s: %s: %s (%s:%d)", call, cudaGetErrorName(e),
           cudaGetErrorString(e), file, line);
  return -1;
}

// Inside a member of the ops table: the context is `x`.
#define CK(call)                                                               \
  do {                                                                         \
    cudaError_t e_ = (call);                                                   \
    if (e_ != cudaSuccess)                                                     \
      return record(x->base.err, sizeof x->base.err, e_, #call, __FILE__,      \
                    __LINE__);                                                 \
  } while (0)

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
  cudaError_t e = cudaSetDevice(x->dev);
  const char *call = "cudaSetDevice(0)";
  if (e == cudaSuccess) {
    call = "cudaStreamCreateWithFlags(cudaStreamNonBlocking)";
    e = cudaStreamCreateWithFlags(&x->stream, cudaStreamNonBlocking);
  }
  if (e == cudaSuccess) {
    call = "cudaEventCreateWithFlags(cudaEventDisableTiming)";
    e = cudaEventCreateWithFlags(&x->done, cudaEventDisableTiming);
    if (e != cudaSuccess)
      cudaStreamDestroy(x->stream);
  }
  if (e != cudaSuccess) {
    record(err, errlen, e, call, __FILE__, __LINE__);
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
  for (int i = 0; i < x->nextra; i++)
    cudaStreamDestroy(x->extra[i]);
  free(x->extra);
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
  if (!v) {
    snprintf(x->base.err, sizeof x->base.err, "raw CUDA: out of memory");
    return -1;
  }
  x->extra = v;
  CK(cudaSetDevice(x->dev));
  for (; x->nextra < n; x->nextra++)
    CK(cudaStreamCreateWithFlags(&x->extra[x->nextra], cudaStreamNonBlocking));
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
      return record(err, errlen, e, #call, __FILE__, __LINE__);                \
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
          : record(err, sizeof err, e, "cudaSetDevice", __FILE__, __LINE__);
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

} // namespace

extern "C" const bench_raw_ops bench_raw_cuda = {
    raw_open, raw_close,     raw_streams,      raw_launch,
    raw_sync, raw_roundtrip, raw_tasks_serial, raw_tasks_threads,
};
