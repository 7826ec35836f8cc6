/* weft_copy in every direction, byte-exact.
 *
 * One round queues, on the calling task's or thread's stream:
 *   pageable -> device d1, d1 -> device d2, d2 -> pageable o1,
 *   d2 -> pinned p2, pinned p1 -> device d3, d3 -> pageable o2,
 *   p1 -> pinned p3, pageable -> pageable o3,
 * then weft_sync, and only then checks that every destination equals the
 * source (pageable destinations are written by helper tasks that weft_sync
 * waits for, so nothing is checked before it) and that the bytes after
 * each host destination are untouched. Sources are random and never zero,
 * destinations start zeroed, so short, shifted or swapped chunks show.
 *
 * Sizes sit on the edges of the 4 MiB staging chunks (0, 1, 7, 4 MiB - 1,
 * 4 MiB, 4 MiB + 1, 9 MiB + 3) plus one large copy (96 MiB; 12 MiB
 * under sanitizers or WEFT_TEST_QUICK) through pageable and pinned
 * memory. The rounds run on the main thread, in a task (with the large
 * copy), on a second plain thread and in several tasks at once (fewer
 * sizes and tasks under tt_quick: the sanitizers slow every byte); a task
 * also copies from and to its own stack, and a thread exits with its
 * copy out still staging. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "mem_common.h"

enum { GUARD = 64, GUARD_BYTE = 0xC3 };

static const size_t sizes[] = {
    0, 1, 7, 4 * MT_MIB - 1, 4 * MT_MIB, 4 * MT_MIB + 1, 9 * MT_MIB + 3};
enum { NSIZES = sizeof sizes / sizeof sizes[0] };

static weft_runtime *rt;

typedef enum kind { PAGEABLE, PINNED, DEVICE } kind;

/* A buffer of up to cap bytes plus GUARD bytes for a guard pattern. */
typedef struct buf {
  kind k;
  size_t cap;
  unsigned char *p;
} buf;

static buf buf_new(kind k, size_t cap) {
  buf b = {k, cap, NULL};
  size_t total = cap + GUARD;
  if (k == PAGEABLE) {
    b.p = malloc(total);
    EXPECT(b.p != NULL);
  } else if (k == PINNED) {
    EXPECT_OK(weft_pinned_alloc(total, (void **)&b.p));
  } else {
    EXPECT_OK(weft_device_alloc(total, (void **)&b.p));
  }
  return b;
}

static void buf_free(buf *b) {
  if (b->k == PAGEABLE)
    free(b->p);
  else if (b->k == PINNED)
    EXPECT_OK(weft_pinned_free(b->p));
  else
    EXPECT_OK(weft_device_free(b->p));
  b->p = NULL;
}

/* A host destination for n bytes: zeroed, then the guard. For 0 bytes one
 * zero byte stands in, which must stay 0. */
static void dst_reset(buf *b, size_t n) {
  size_t m = n ? n : 1;
  memset(b->p, 0, m);
  memset(b->p + m, GUARD_BYTE, GUARD);
}

/* It holds want (or, for 0 bytes, is untouched) and its guard is intact. */
static void dst_check(const buf *b, size_t n, const unsigned char *want,
                      const char *what, const char *where) {
  char msg[160];
  snprintf(msg, sizeof msg, "%s, %s", what, where);
  if (n)
    mt_check_same(b->p, want, n, msg);
  else
    mt_check_all(b->p, 0, 1, msg);
  mt_check_all(b->p + (n ? n : 1), GUARD_BYTE, GUARD, msg);
}

/* The buffers of a round, allocated once for the largest size: fresh
 * memory for every size would spend the test's time in page faults. Device
 * buffers keep the previous round's bytes, which new random data differ
 * from, so a copy left out still shows. */
typedef struct set {
  buf h, p1, d1, d2, d3, o1, o2, o3, p2, p3;
} set;

static void set_new(set *s, size_t cap) {
  s->h = buf_new(PAGEABLE, cap);
  s->p1 = buf_new(PINNED, cap);
  s->d1 = buf_new(DEVICE, cap);
  s->d2 = buf_new(DEVICE, cap);
  s->d3 = buf_new(DEVICE, cap);
  s->o1 = buf_new(PAGEABLE, cap);
  s->o2 = buf_new(PAGEABLE, cap);
  s->o3 = buf_new(PAGEABLE, cap);
  s->p2 = buf_new(PINNED, cap);
  s->p3 = buf_new(PINNED, cap);
}

static void set_free(set *s) {
  buf_free(&s->d1);
  buf_free(&s->d2);
  buf_free(&s->d3);
  EXPECT_OK(weft_sync());
  buf_free(&s->h);
  buf_free(&s->p1);
  buf_free(&s->o1);
  buf_free(&s->o2);
  buf_free(&s->o3);
  buf_free(&s->p2);
  buf_free(&s->p3);
}

/* Every direction for n bytes. */
static void round_all(set *s, size_t n, uint64_t *seed, const char *where) {
  size_t m = n ? n : 1;
  mt_fill(s->h.p, m, seed);
  memset(s->h.p + m, GUARD_BYTE, GUARD);
  memcpy(s->p1.p, s->h.p, m);
  dst_reset(&s->o1, n);
  dst_reset(&s->o2, n);
  dst_reset(&s->o3, n);
  dst_reset(&s->p2, n);
  dst_reset(&s->p3, n);

  EXPECT_OK(weft_copy(s->d1.p, s->h.p, n));  /* pageable -> device */
  EXPECT_OK(weft_copy(s->d2.p, s->d1.p, n)); /* device -> device */
  EXPECT_OK(weft_copy(s->o1.p, s->d2.p, n)); /* device -> pageable */
  EXPECT_OK(weft_copy(s->p2.p, s->d2.p, n)); /* device -> pinned */
  EXPECT_OK(weft_copy(s->d3.p, s->p1.p, n)); /* pinned -> device */
  EXPECT_OK(weft_copy(s->o2.p, s->d3.p, n)); /* device -> pageable */
  EXPECT_OK(weft_copy(s->p3.p, s->p1.p, n)); /* pinned -> pinned */
  EXPECT_OK(weft_copy(s->o3.p, s->h.p, n));  /* pageable -> pageable */
  EXPECT_OK(weft_sync());

  dst_check(&s->o1, n, s->h.p, "pageable->device->device->pageable", where);
  dst_check(&s->p2, n, s->h.p, "pageable->device->device->pinned", where);
  dst_check(&s->o2, n, s->h.p, "pinned->device->pageable", where);
  dst_check(&s->p3, n, s->h.p, "pinned->pinned", where);
  dst_check(&s->o3, n, s->h.p, "pageable->pageable", where);
  mt_check_all(s->h.p + m, GUARD_BYTE, GUARD, "source guard");
}

/* One large copy: pageable -> device -> pageable and -> pinned, and
 * pinned -> device -> pageable. */
static void round_large(uint64_t *seed, const char *where) {
  size_t n = tt_quick() ? 12 * MT_MIB + 5 : 96 * MT_MIB;
  buf h = buf_new(PAGEABLE, n), d = buf_new(DEVICE, n);
  buf o = buf_new(PAGEABLE, n), p = buf_new(PINNED, n);
  mt_fill(h.p, n, seed);
  dst_reset(&o, n);
  dst_reset(&p, n);
  EXPECT_OK(weft_copy(d.p, h.p, n));
  EXPECT_OK(weft_copy(o.p, d.p, n));
  EXPECT_OK(weft_copy(p.p, d.p, n));
  EXPECT_OK(weft_sync());
  dst_check(&o, n, h.p, "large pageable->device->pageable", where);
  dst_check(&p, n, h.p, "large pageable->device->pinned", where);

  /* Back the other way from the pinned copy, into a clean pageable. */
  dst_reset(&o, n);
  EXPECT_OK(weft_memset(d.p, 0, n));
  EXPECT_OK(weft_copy(d.p, p.p, n));
  EXPECT_OK(weft_copy(o.p, d.p, n));
  EXPECT_OK(weft_sync());
  dst_check(&o, n, h.p, "large pinned->device->pageable", where);

  buf_free(&d);
  EXPECT_OK(weft_sync());
  buf_free(&h);
  buf_free(&o);
  buf_free(&p);
}

typedef struct job {
  uint64_t seed;
  int first, last; /* range of sizes[] */
  int large;
  const char *where;
  int ok;
} job;

static void run_job(job *j) {
  set s;
  set_new(&s, sizes[j->last]);
  for (int i = j->first; i <= j->last; i++)
    round_all(&s, sizes[i], &j->seed, j->where);
  set_free(&s);
  if (j->large)
    round_large(&j->seed, j->where);
  j->ok = 1;
}

static void job_task(void *arg) { run_job(arg); }

static void *job_thread(void *arg) {
  run_job(arg);
  return NULL;
}

/* Copies from and to the task's own stack. */
static void stack_task(void *arg) {
  unsigned char src[300], back[300 + GUARD], pinned_back[300];
  uint64_t seed = 4242;
  mt_fill(src, sizeof src, &seed);
  memset(back, 0, sizeof back);
  memset(back + 300, GUARD_BYTE, GUARD);
  void *d;
  unsigned char *p;
  EXPECT_OK(weft_device_alloc(300, &d));
  EXPECT_OK(weft_pinned_alloc(300, (void **)&p));
  memset(p, 0, 300);
  EXPECT_OK(weft_copy(d, src, 300));
  EXPECT_OK(weft_copy(back, d, 300));
  EXPECT_OK(weft_copy(p, d, 300));
  EXPECT_OK(weft_device_free(d));
  EXPECT_OK(weft_sync());
  mt_check_same(back, src, 300, "stack->device->stack");
  mt_check_all(back + 300, GUARD_BYTE, GUARD, "stack destination guard");
  memcpy(pinned_back, p, 300);
  mt_check_same(pinned_back, src, 300, "stack->device->pinned");
  EXPECT_OK(weft_pinned_free(p));
  *(int *)arg = 1;
}

/* Extents weft can check: past the end of a device allocation it made
 * (from its start), and around the end of the address space. Refused at
 * the call; they used to queue and crash on an executor thread. */
static void bad_extents(void) {
  unsigned char *d, *h = malloc(65536);
  EXPECT(h != NULL);
  EXPECT_OK(weft_device_alloc(64, (void **)&d));
  EXPECT_ERR(weft_copy(d, h, 65536), WEFT_EINVAL);
  EXPECT(strstr(weft_last_error_message(), "64 bytes") != NULL);
  EXPECT_ERR(weft_copy(h, d, 65), WEFT_EINVAL);
  EXPECT_ERR(weft_copy(h, d, SIZE_MAX), WEFT_EINVAL);
  EXPECT_ERR(weft_copy(h, h + 1, SIZE_MAX), WEFT_EINVAL);
  EXPECT_ERR(weft_memset(d, 0, (size_t)1 << 50), WEFT_EINVAL);
  EXPECT_ERR(weft_memset(d, 0, 65), WEFT_EINVAL);
  EXPECT_OK(weft_memset(d, 0, 64)); /* the whole of it is fine */
  EXPECT_OK(weft_copy(h, d, 64));
  EXPECT_OK(weft_device_free(d));
  EXPECT_OK(weft_sync());

  /* Past the end of a pinned allocation: blocks of a size class share a
   * 2 MiB chunk, and a copy or memset past a block's end overwrote the
   * next block (another allocation) unrefused. The first block of a new
   * chunk is its lowest, the next ones come from its top down: b sits
   * right below a. */
  unsigned char *first, *a, *b;
  EXPECT_OK(weft_pinned_alloc(100, (void **)&first));
  EXPECT_OK(weft_pinned_alloc(100, (void **)&a));
  EXPECT_OK(weft_pinned_alloc(100, (void **)&b));
  memset(a, 0xAA, 100);
  memset(b, 0xBB, 100);
  memset(h, 0x11, 1024);
  EXPECT_ERR(weft_copy(b, h, 1024), WEFT_EINVAL);
  EXPECT(strstr(weft_last_error_message(), "100 bytes") != NULL);
  EXPECT_ERR(weft_copy(h, b, 101), WEFT_EINVAL);
  EXPECT_ERR(weft_copy(b + 50, h, 51), WEFT_EINVAL);
  EXPECT_ERR(weft_memset(b, 0, 101), WEFT_EINVAL);
  EXPECT_OK(weft_copy(b + 50, h, 50)); /* up to the end is fine */
  EXPECT_OK(weft_memset(b, 0x22, 50));
  EXPECT_OK(weft_sync());
  mt_check_all(a, 0xAA, 100, "the pinned block next to one copied into");
  mt_check_all(b + 50, 0x11, 50, "a pinned block's tail");
  EXPECT_OK(weft_pinned_free(first));
  EXPECT_OK(weft_pinned_free(a));
  EXPECT_OK(weft_pinned_free(b));
  free(h);
}

/* A plain thread that copies from the device into pageable memory and
 * exits without weft_sync: its exit joins the staging helpers, so the
 * bytes are there once the thread is joined and the device synced, and
 * nothing leaks. */
typedef struct leaver {
  unsigned char *src, *dst;
  size_t n;
} leaver;

static void *leave_thread(void *arg) {
  leaver *l = arg;
  void *d;
  EXPECT_OK(weft_device_alloc(l->n, &d));
  EXPECT_OK(weft_copy(d, l->src, l->n));
  EXPECT_OK(weft_copy(l->dst, d, l->n));
  EXPECT_OK(weft_device_free(d));
  return NULL; /* no weft_sync */
}

static void thread_leaves_copies(void) {
  leaver l = {.n = 3 * 4 * MT_MIB + 5};
  l.src = malloc(l.n);
  l.dst = calloc(1, l.n);
  EXPECT(l.src && l.dst);
  uint64_t seed = 77;
  mt_fill(l.src, l.n, &seed);
  pthread_t th;
  EXPECT(pthread_create(&th, NULL, leave_thread, &l) == 0);
  EXPECT(pthread_join(th, NULL) == 0);
  /* The thread's copy is done on the device; where it was staged, the
   * helpers' half (no device work) is done only if the exit joined them. */
  EXPECT_OK(weft_device_sync());
  mt_check_same(l.dst, l.src, l.n, "copied out by a thread that exited");
  free(l.src);
  free(l.dst);
}

int main(void) {
  /* Concurrent tasks allocate pinned buffers here on purpose; weft check
   * rightly reports those cache misses as device-wide waits, so it stays
   * off for this test even under WEFT_CHECK=1. */
  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  o.check = 0;
  rt = tt_open(&o);
  bad_extents();

  /* Zero bytes succeed even with NULL pointers. */
  EXPECT_OK(weft_copy(NULL, NULL, 0));

  /* The main thread: every size (all but 9 MiB + 3 under tt_quick). */
  job main_job = {.seed = 1,
                  .first = 0,
                  .last = tt_quick() ? NSIZES - 2 : NSIZES - 1,
                  .large = 0,
                  .where = "main thread"};
  run_job(&main_job);

  /* A task: every size, and the large copy. */
  job task_job = {
      .seed = 2, .first = 0, .last = NSIZES - 1, .large = 1, .where = "task"};
  weft_task *t;
  EXPECT_OK(weft_task_spawn(rt, &t, job_task, &task_job, NULL));
  EXPECT_OK(weft_task_join(t));
  EXPECT(task_job.ok);

  /* A second plain thread, with its own stream (under tt_quick, only the
   * sizes up to one staging chunk: the sanitizers slow every byte). */
  job thread_job = {.seed = 3,
                    .first = 0,
                    .last = tt_quick() ? 4 : NSIZES - 1,
                    .large = 0,
                    .where = "second thread"};
  pthread_t th;
  EXPECT(pthread_create(&th, NULL, job_thread, &thread_job) == 0);
  EXPECT(pthread_join(th, NULL) == 0);
  EXPECT(thread_job.ok);

  /* Several tasks staging multi-chunk copies at once. */
  enum { PAR = 3 };
  job par[PAR];
  weft_task *pt[PAR];
  int npar = tt_quick() ? 2 : PAR;
  for (int i = 0; i < npar; i++) {
    par[i] = (job){.seed = 10 + (uint64_t)i,
                   .first = tt_quick() ? 5 : 3,
                   .last = tt_quick() ? 5 : NSIZES - 1,
                   .where = "concurrent tasks"};
    EXPECT_OK(weft_task_spawn(rt, &pt[i], job_task, &par[i], NULL));
  }
  for (int i = 0; i < npar; i++) {
    EXPECT_OK(weft_task_join(pt[i]));
    EXPECT(par[i].ok);
  }

  thread_leaves_copies();

  int stack_ok = 0;
  EXPECT_OK(weft_task_spawn(rt, &t, stack_task, &stack_ok, NULL));
  EXPECT_OK(weft_task_join(t));
  EXPECT(stack_ok);

  weft_mem_stats s = mt_stats(rt);
  EXPECT_EQ_INT(s.pinned_blocks, 0);
  EXPECT_EQ_INT(s.device_allocs, 0);
  tt_close(rt);
  puts("ok");
  return 0;
}
