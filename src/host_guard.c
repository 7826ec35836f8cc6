/* Guarded pages of registered host memory (host_guard.h). A slot per
 * guarded handle, found by the SIGSEGV handler without a lock: its state
 * says whether the pages are protected (ARMED), opened by a fault
 * (TRIPPED, or OPENED by one of weft's own, unreported) or being opened
 * by weft__guard_off (OPENING). */
#include "host_guard.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

enum { FREE, ARMED, TRIPPED, OPENING, OPENED };

typedef struct slot {
  _Atomic int state;
  _Atomic uintptr_t lo, hi; /* the protected pages */
  /* Set before the state leaves FREE, for the report. */
  const void *base;
  size_t bytes;
  int dev, fd, reads_ok;
  int prot; /* the pages' own protection, given back when opened */
} slot;

/* Handles guarded at once at most; past it, a handle goes unguarded. */
#define SLOTS 4096

static slot slots[SLOTS];
static _Atomic int nslots; /* slots ever used: the handler looks no further */
static pthread_mutex_t taking = PTHREAD_MUTEX_INITIALIZER;
static void (*_Atomic ours)(int, siginfo_t *, void *);

_Thread_local int weft__guard_quiet;

void weft__guard_enable(void (*handler)(int, siginfo_t *, void *)) {
  atomic_store(&ours, handler);
}

static int handler_installed(void) {
  void (*h)(int, siginfo_t *, void *) = atomic_load(&ours);
  struct sigaction cur;
  return h && sigaction(SIGSEGV, NULL, &cur) == 0 &&
         (cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == h;
}

/* The whole pages of [base, base + bytes): 0 if there are none. */
static int whole_pages(const void *base, size_t bytes, uintptr_t *lo,
                       uintptr_t *hi) {
  uintptr_t ps = (uintptr_t)sysconf(_SC_PAGESIZE);
  *lo = ((uintptr_t)base + ps - 1) & ~(ps - 1);
  *hi = ((uintptr_t)base + bytes) & ~(ps - 1);
  return *lo < *hi && (uintptr_t)base + bytes >= (uintptr_t)base;
}

int weft__guard_prot(const void *base, size_t bytes) {
  uintptr_t lo, hi;
  if (!whole_pages(base, bytes, &lo, &hi))
    return -1;
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f)
    return -1;
  /* The mappings come in address order: walk them from lo, each one
   * covering the next byte, and keep the protections they share. */
  int prot = PROT_READ | PROT_WRITE | PROT_EXEC;
  uintptr_t at = lo;
  char buf[512];
  while (at < hi && fgets(buf, sizeof buf, f)) {
    uintmax_t a, b;
    char perms[5];
    if (sscanf(buf, "%jx-%jx %4s", &a, &b, perms) != 3)
      break;
    if (b <= at)
      continue;
    if (a > at)
      break; /* a gap: not mapped */
    prot &= (perms[0] == 'r' ? PROT_READ : 0) |
            (perms[1] == 'w' ? PROT_WRITE : 0) |
            (perms[2] == 'x' ? PROT_EXEC : 0);
    at = (uintptr_t)b;
    /* A line longer than the buffer: skip the rest of it. */
    while (!strchr(buf, '\n') && fgets(buf, sizeof buf, f))
      ;
  }
  fclose(f);
  return at >= hi ? prot : -1;
}

int weft__guard_on(const void *base, size_t bytes, int prot, int dev, int fd,
                   int reads_ok) {
  uintptr_t lo, hi;
  /* Pages that refuse stores already need no read-only guard, and pages
   * that cannot be read are no program's data. */
  if (!whole_pages(base, bytes, &lo, &hi) || prot < 0 || !(prot & PROT_READ) ||
      (reads_ok && !(prot & PROT_WRITE)) || !handler_installed())
    return -1;
  pthread_mutex_lock(&taking);
  int i = 0, n = atomic_load(&nslots);
  while (i < n && atomic_load(&slots[i].state) != FREE)
    i++;
  if (i == SLOTS) {
    pthread_mutex_unlock(&taking);
    return -1;
  }
  slot *s = &slots[i];
  s->base = base;
  s->bytes = bytes;
  s->dev = dev;
  s->fd = fd;
  s->reads_ok = reads_ok;
  s->prot = prot;
  atomic_store(&s->lo, lo);
  atomic_store(&s->hi, hi);
  /* Findable before the pages fault. */
  atomic_store(&s->state, ARMED);
  if (i == n)
    atomic_store(&nslots, n + 1);
  if (mprotect((void *)lo, hi - lo,
               reads_ok ? prot & ~PROT_WRITE : PROT_NONE) != 0) {
    atomic_store(&s->lo, 0);
    atomic_store(&s->hi, 0);
    atomic_store(&s->state, FREE);
    i = -1;
  }
  pthread_mutex_unlock(&taking);
  return i;
}

int weft__guard_off(int i) {
  if (i < 0 || i >= SLOTS)
    return 0;
  slot *s = &slots[i];
  pthread_mutex_lock(&taking);
  int was = atomic_exchange(&s->state, OPENING);
  uintptr_t lo = atomic_load(&s->lo), hi = atomic_load(&s->hi);
  /* After a fault too: its handler may not have opened them yet, and once
   * the slot is free a second fault there would find no guard. */
  if (was == ARMED || was == TRIPPED || was == OPENED)
    mprotect((void *)lo, hi - lo, s->prot);
  atomic_store(&s->lo, 0);
  atomic_store(&s->hi, 0);
  atomic_store(&s->state, FREE);
  pthread_mutex_unlock(&taking);
  return was == TRIPPED;
}

/* ---- the report, written without stdio (a signal handler's) ---- */

typedef struct line {
  char b[768];
  size_t n;
} line;

static void put(line *l, const char *s) {
  while (*s && l->n < sizeof l->b - 1)
    l->b[l->n++] = *s++;
}

static void put_num(line *l, uintptr_t v, unsigned base) {
  char d[24];
  int k = 0;
  do {
    d[k++] = "0123456789abcdef"[v % base];
    v /= base;
  } while (v);
  if (base == 16)
    put(l, "0x");
  while (k > 0 && l->n < sizeof l->b - 1)
    l->b[l->n++] = d[--k];
}

static void report(const slot *s, const void *addr, int store,
                   const char *who) {
  line l = {.n = 0};
  put(&l, "weft check: stale: ");
  if (who) {
    put(&l, "task '");
    put(&l, who);
    put(&l, "'");
  } else {
    put(&l, "a plain thread");
  }
  /* Read-only pages fault on a store alone. */
  if (s->reads_ok)
    store = 1;
  put(&l, store > 0 ? " writes" : store == 0 ? " reads" : " touches");
  put(&l, " registered data on the CPU at ");
  put_num(&l, (uintptr_t)addr, 16);
  put(&l, ", in the ");
  put_num(&l, s->bytes, 10);
  put(&l, " bytes registered at ");
  put_num(&l, (uintptr_t)s->base, 16);
  if (s->reads_ok) {
    put(&l, ", of which device ");
    put_num(&l, (uintptr_t)s->dev, 10);
    put(&l, " holds a copy too: its host memory is weft's until "
            "weft_data_unregister, and the device's copy keeps the old "
            "bytes; write it in a task through weft_data_get, or "
            "unregister first");
  } else {
    put(&l, ", whose valid copy is on device ");
    put_num(&l, (uintptr_t)s->dev, 10);
    if (store > 0)
      put(&l, ": its host memory is weft's until weft_data_unregister, and "
              "a later sync copies over the write; write it in a task "
              "through weft_data_get, or sync and unregister first");
    else
      put(&l, ": the host copy is stale; call weft_data_sync first, or use "
              "it in a task through weft_data_get");
  }
  put(&l, " (reported once until the copies change)\n");
  ssize_t r = write(s->fd, l.b, l.n);
  (void)r;
}

int weft__guard_fault(const void *addr, int store, const char *who) {
  uintptr_t a = (uintptr_t)addr;
  int n = atomic_load(&nslots);
  for (int i = 0; i < n; i++) {
    slot *s = &slots[i];
    int st = atomic_load(&s->state);
    if (st == FREE)
      continue;
    uintptr_t lo = atomic_load(&s->lo), hi = atomic_load(&s->hi);
    if (a < lo || a >= hi)
      continue;
    int to = weft__guard_quiet ? OPENED : TRIPPED;
    if (st == ARMED && atomic_compare_exchange_strong(&s->state, &st, to)) {
      mprotect((void *)lo, hi - lo, s->prot);
      if (to == TRIPPED)
        report(s, addr, store, who);
    }
    /* Opened, or being opened by another: the access runs again. */
    return 1;
  }
  return 0;
}
