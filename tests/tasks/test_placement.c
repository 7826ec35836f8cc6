/* Placing tasks on devices, on every backend (the host backend emulating
 * four; CUDA has what it has): a task placed on a device reports it
 * (weft_task_device), its stream and its memory are that device's; its
 * children inherit it unless they name another; WEFT_DEVICE_ANY spreads
 * live tasks evenly and, between idle devices, goes round; a plain thread
 * is on device 0; bad devices are refused. */
#include <stdio.h>
#include <string.h>

#include "task_common.h"
#include "weft_internal.h"

enum { MAXDEV = 16 };

static int ndev;

typedef struct probe {
  int want;     /* device it was placed on, or -1 when not asked */
  int saw;      /* weft_task_device() */
  int stream_d; /* its stream's device */
  int child;    /* its default-placed child's device */
  int other;    /* its child placed on (want + 1) % ndev */
} probe;

static void report(void *arg) {
  probe *p = arg;
  p->saw = weft_task_device();
}

static void placed(void *arg) {
  probe *p = arg;
  p->saw = weft_task_device();
  void *d;
  EXPECT_OK(weft_device_alloc(256, &d));
  EXPECT_OK(weft_memset(d, 1, 256));
  EXPECT_OK(weft_sync());
  p->stream_d = (int)weft__caller_self()->stream->hdr.dev;
  EXPECT_OK(weft_device_free(d));
  probe c = {0}, o = {0};
  weft_task *t;
  EXPECT_OK(weft_task_spawn(weft__caller_self()->rt, &t, report, &c, NULL));
  EXPECT_OK(weft_task_join(t));
  p->child = c.saw;
  weft_task_opts opts;
  weft_task_opts_init(&opts);
  opts.device = (p->want + 1) % ndev;
  EXPECT_OK(weft_task_spawn(weft__caller_self()->rt, &t, report, &o, &opts));
  EXPECT_OK(weft_task_join(t));
  p->other = o.saw;
}

static int released;

/* Alive until released: the placement of the next ones counts it. */
static void held(void *arg) {
  probe *p = arg;
  p->saw = weft_task_device();
  while (!tt_load(&released))
    weft_yield();
}

int main(void) {
  weft_runtime_opts ro;
  weft_runtime_opts_init(&ro);
  ro.host_devices = 4;
  ro.workers = 4;
  weft_runtime *rt = tt_open(&ro);
  EXPECT_OK(weft_device_count(rt, &ndev));
  EXPECT(ndev >= 1 && ndev <= MAXDEV);
  if (weft_runtime_backend(rt) == WEFT_BACKEND_HOST)
    EXPECT_EQ_INT(ndev, 4);
  EXPECT_EQ_INT(weft_task_device(), 0);

  /* Explicit placement, inheritance, a child placed elsewhere. */
  probe p[MAXDEV];
  weft_task *t[4 * MAXDEV];
  for (int d = 0; d < ndev; d++) {
    p[d] = (probe){.want = d};
    weft_task_opts o;
    weft_task_opts_init(&o);
    o.device = d;
    EXPECT_OK(weft_task_spawn(rt, &t[d], placed, &p[d], &o));
  }
  EXPECT_OK(weft_device_sync()); /* device 0's, from the plain thread */
  for (int d = 0; d < ndev; d++) {
    EXPECT_OK(weft_task_join(t[d]));
    EXPECT_MSG(p[d].saw == d && p[d].stream_d == d,
               "placed on %d: weft_task_device %d, stream on %d", d, p[d].saw,
               p[d].stream_d);
    EXPECT_MSG(p[d].child == d, "a child of a task on %d inherited %d", d,
               p[d].child);
    EXPECT_MSG(p[d].other == (d + 1) % ndev, "a child placed on %d ran on %d",
               (d + 1) % ndev, p[d].other);
  }

  /* WEFT_DEVICE_ANY: two live tasks per device, all held at once. */
  probe q[4 * MAXDEV];
  int n = 2 * ndev;
  for (int i = 0; i < n; i++) {
    q[i] = (probe){.want = -1};
    weft_task_opts o;
    weft_task_opts_init(&o);
    o.device = WEFT_DEVICE_ANY;
    EXPECT_OK(weft_task_spawn(rt, &t[i], held, &q[i], &o));
  }
  tt_add(&released, 1);
  int per[MAXDEV] = {0};
  for (int i = 0; i < n; i++) {
    EXPECT_OK(weft_task_join(t[i]));
    EXPECT(q[i].saw >= 0 && q[i].saw < ndev);
    per[q[i].saw]++;
  }
  for (int d = 0; d < ndev; d++)
    EXPECT_MSG(per[d] == 2, "WEFT_DEVICE_ANY put %d of %d live tasks on %d",
               per[d], n, d);

  /* Idle devices tie: one task at a time goes round them all. */
  int seen[MAXDEV] = {0};
  for (int i = 0; i < ndev; i++) {
    probe r = {.want = -1};
    weft_task_opts o;
    weft_task_opts_init(&o);
    o.device = WEFT_DEVICE_ANY;
    EXPECT_OK(weft_task_spawn(rt, &t[0], report, &r, &o));
    EXPECT_OK(weft_task_join(t[0]));
    seen[r.saw]++;
  }
  for (int d = 0; d < ndev; d++)
    EXPECT_MSG(seen[d] == 1, "going round %d idle devices, %d got %d tasks",
               ndev, d, seen[d]);

  weft_task_opts o;
  weft_task_opts_init(&o);
  o.device = ndev;
  EXPECT_ERR(weft_task_spawn(rt, &t[0], report, NULL, &o), WEFT_ENODEV);
  o.device = -5;
  EXPECT_ERR(weft_task_spawn(rt, &t[0], report, NULL, &o), WEFT_ENODEV);
  tt_close(rt);
  puts("ok");
  return 0;
}
