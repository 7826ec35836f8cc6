/* The host backend's lifetime and its devices: one, or as many as
 * weft_runtime_opts.host_devices asks, each with executor threads of its
 * own (and its own streams, memory and device_sync). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpus.h"
#include "error_internal.h"
#include "host/host_internal.h"

/* weft_init validated WEFT_HOST_THREADS into cfg->host_threads; 0: a
 * thread per core the process may run on, at least two, so that
 * independent streams overlap even on one core. */
static int default_threads(void) {
  int cores = weft__cpus_available();
  return cores > 2 ? cores : 2;
}

static void conds_destroy(weft__host_backend *hb, int n) {
  for (int d = 0; d < n; d++)
    pthread_cond_destroy(&hb->work[d]);
}

int weft__host_open(weft__backend *b, const weft__backend_config *cfg) {
  weft__host_backend *hb = weft__host_of(b);
  hb->ndev = cfg->host_devices > 0 ? cfg->host_devices : 1;
  const char *pg = getenv("WEFT_HOST_PAGEABLE");
  hb->pageable = pg && strcmp(pg, "1") == 0;
  /* Threads per device: as asked, else the cores shared out between the
   * devices, at least two each. */
  int n =
      cfg->host_threads > 0 ? cfg->host_threads : default_threads() / hb->ndev;
  if (n < 1 || (cfg->host_threads <= 0 && n < 2))
    n = cfg->host_threads > 0 ? 1 : 2;
  if (pthread_mutex_init(&hb->mu, NULL) != 0)
    return weft__err(WEFT_ENOMEM, "host backend: pthread_mutex_init failed");
  int made = 0;
  while (made < hb->ndev && pthread_cond_init(&hb->work[made], NULL) == 0)
    made++;
  if (made < hb->ndev || pthread_cond_init(&hb->progress, NULL) != 0) {
    conds_destroy(hb, made);
    pthread_mutex_destroy(&hb->mu);
    return weft__err(WEFT_ENOMEM, "host backend: pthread_cond_init failed");
  }
  /* device_info is read by the core right after open; the thread count
   * must be known first. */
  hb->nthreads = n;
  int rc = weft__host_exec_start(hb, n);
  if (rc) {
    pthread_cond_destroy(&hb->progress);
    conds_destroy(hb, hb->ndev);
    pthread_mutex_destroy(&hb->mu);
  } else if (hb->pageable) {
    weft__host_pageable_join(hb);
  }
  return rc;
}

void weft__host_close(weft__backend *b) {
  weft__host_backend *hb = weft__host_of(b);
  if (hb->pageable)
    weft__host_pageable_leave(hb);
  weft__host_exec_stop(hb);
  weft__host_cache_drain(hb);
  pthread_cond_destroy(&hb->progress);
  conds_destroy(hb, hb->ndev);
  pthread_mutex_destroy(&hb->mu);
}

int weft__host_device_count(weft__backend *b, int *count) {
  *count = weft__host_of(b)->ndev;
  return 0;
}

int weft__host_device_info(weft__backend *b, int dev, weft_device_info *info) {
  weft__host_backend *hb = weft__host_of(b);
  long page = sysconf(_SC_PAGESIZE);
  long pages = sysconf(_SC_PHYS_PAGES);
  long avail = sysconf(_SC_AVPHYS_PAGES);
  memset(info, 0, sizeof *info);
  if (hb->ndev > 1)
    snprintf(info->name, sizeof info->name,
             "host device %d of %d (%d executor threads)", dev, hb->ndev,
             hb->nthreads);
  else
    snprintf(info->name, sizeof info->name, "host (%d executor threads)",
             hb->nthreads);
  info->backend = WEFT_BACKEND_HOST;
  info->ordinal = dev;
  info->multiprocessors = hb->nthreads;
  info->copy_engines = 0; /* copies run on the executor threads */
  info->concurrent_kernels = 1;
  info->max_resident_grids = hb->nthreads;
  info->max_threads_per_block = 1024;
  info->priority_least = WEFT__HOST_PRIO_LEAST;
  info->priority_greatest = WEFT__HOST_PRIO_GREATEST;
  info->memory_total = (size_t)pages * (size_t)page;
  info->memory_free = (size_t)avail * (size_t)page;
  info->unified_addressing = 1;
  return 0;
}

int weft__host_device_sync(weft__backend *b, int dev) {
  weft__host_backend *hb = weft__host_of(b);
  uint64_t corr = 0, task = 0; /* traced as CUDA's (host_trace.c) */
  uint64_t t0 = weft__host_trace_issue(b, &corr, &task);
  pthread_mutex_lock(&hb->mu);
  /* Every operation of the device not yet complete was queued before
   * this call; op_done counts them down as they complete, whatever
   * completes meanwhile that was queued after. */
  host_dev_sync w = {hb->dev_syncs[dev], hb->dev_submitted[dev],
                     hb->dev_submitted[dev] - hb->dev_completed[dev]};
  if (w.remaining) {
    hb->dev_syncs[dev] = &w;
    while (w.remaining)
      pthread_cond_wait(&hb->progress, &hb->mu);
    host_dev_sync **pp = &hb->dev_syncs[dev];
    while (*pp != &w)
      pp = &(*pp)->next;
    *pp = w.next;
  }
  pthread_mutex_unlock(&hb->mu);
  if (t0)
    weft__host_trace_api(t0, corr, task, "cudaDeviceSynchronize");
  return 0;
}

void weft__host_set_completion_hook(weft__backend *b, void (*fn)(void *),
                                    void *arg) {
  weft__host_backend *hb = weft__host_of(b);
  pthread_mutex_lock(&hb->mu);
  hb->hook = fn;
  hb->hook_arg = arg;
  pthread_mutex_unlock(&hb->mu);
}
