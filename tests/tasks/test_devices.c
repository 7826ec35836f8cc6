/* Work across devices, on every backend (the host backend emulating four;
 * CUDA has what it has, and with one device every placement below is
 * device 0, the same program): weft_copy from one device's memory to
 * another's; weft_task_after and weft_event_wait ordering a task on one
 * device after work on another, held back by a gate until the test opens
 * it; weft_device_peer for every pair, and its bad input; pinned memory read
 * and written from every device; weft_device_sync from a task on each device;
 * and, with several devices, a launch given another device's memory refused
 * with WEFT_EINVAL before anything is queued. */
#include <stdio.h>
#include <string.h>

#include "task_common.h"

enum { MAXDEV = 16, N = 1024 };

static int ndev;

/* ---- a copy from device `from`'s memory to device `to`'s ---- */

typedef struct copy_job {
  int *src;   /* on the source device, filled by the test */
  int *dst;   /* made here, on the task's device */
  int *pin;   /* pinned: the result read back */
  int *seen;  /* pinned: the source read back by its own device */
  int rc_bad; /* a launch on the other device's memory (several devices) */
} copy_job;

static void fill_task(void *arg) {
  copy_job *j = arg;
  EXPECT_OK(weft_device_alloc(N * sizeof(int), (void **)&j->src));
  for (int i = 0; i < N; i++)
    j->pin[i] = i * 3 + weft_task_device();
  EXPECT_OK(weft_copy(j->src, j->pin, N * sizeof(int)));
  EXPECT_OK(weft_sync());
}

static void copy_task(void *arg) {
  copy_job *j = arg;
  EXPECT_OK(weft_device_alloc(N * sizeof(int), (void **)&j->dst));
  EXPECT_OK(weft_copy(j->dst, j->src, N * sizeof(int))); /* across devices */
  EXPECT_OK(weft_copy(j->seen, j->dst, N * sizeof(int)));
  EXPECT_OK(weft_sync());
  /* The source is another device's memory: a kernel here may not use it. */
  int v = 5;
  void *args[] = {&j->src, &v};
  j->rc_bad = weft_launch(&tk.set_value, WEFT_DIM1(1), WEFT_DIM1(1), 0, args);
  EXPECT_OK(weft_device_free(j->dst));
}

static void free_task(void *arg) {
  copy_job *j = arg;
  EXPECT_OK(weft_device_free(j->src));
}

static weft_task *spawn_on(weft_runtime *rt, int dev, weft_task_fn fn,
                           void *arg) {
  weft_task_opts o;
  weft_task_opts_init(&o);
  o.device = dev;
  weft_task *t;
  EXPECT_OK(weft_task_spawn(rt, &t, fn, arg, &o));
  return t;
}

static void copies(weft_runtime *rt, int from, int to) {
  copy_job j = {0};
  EXPECT_OK(weft_pinned_alloc(N * sizeof(int), (void **)&j.pin));
  EXPECT_OK(weft_pinned_alloc(N * sizeof(int), (void **)&j.seen));
  EXPECT_OK(weft_task_join(spawn_on(rt, from, fill_task, &j)));
  EXPECT_OK(weft_task_join(spawn_on(rt, to, copy_task, &j)));
  for (int i = 0; i < N; i++)
    EXPECT_MSG(j.seen[i] == i * 3 + from,
               "device %d to %d: element %d is %d, want %d", from, to, i,
               j.seen[i], i * 3 + from);
  if (from != to)
    EXPECT_MSG(j.rc_bad == WEFT_EINVAL,
               "a kernel on device %d given device %d's memory: %s", to, from,
               weft_err_name(j.rc_bad));
  else
    EXPECT_OK(j.rc_bad);
  EXPECT_OK(weft_task_join(spawn_on(rt, from, free_task, &j)));
  EXPECT_OK(weft_pinned_free(j.pin));
  EXPECT_OK(weft_pinned_free(j.seen));
}

/* ---- ordering across devices ---- */

typedef struct order_job {
  tt_gate gate;
  int *value; /* pinned */
  int *dev_a; /* on the writer's device */
  int *out;   /* pinned: what the reader saw */
  weft_task *writer;
} order_job;

static void writer_task(void *arg) {
  order_job *j = arg;
  tt_gate_launch(&j->gate); /* the stream is held until the test opens */
  int v = 41 + weft_task_device();
  void *args[] = {&j->dev_a, &v};
  EXPECT_OK(weft_launch(&tk.set_value, WEFT_DIM1(1), WEFT_DIM1(1), 0, args));
}

/* Ordered after the writer with weft_task_after; copies its value. */
static void after_task(void *arg) {
  order_job *j = arg;
  EXPECT_OK(weft_task_after(j->writer));
  EXPECT_OK(weft_copy(j->out, j->dev_a, sizeof(int)));
  EXPECT_OK(weft_sync());
}

static void order_after(weft_runtime *rt, int wdev, int rdev) {
  order_job j = {0};
  tt_gate_init(&j.gate);
  EXPECT_OK(weft_pinned_alloc(sizeof(int), (void **)&j.out));
  *j.out = -1;
  weft_task_opts o;
  weft_task_opts_init(&o);
  o.device = wdev;
  /* The writer's memory is made on its device by a task there. */
  copy_job a = {0};
  EXPECT_OK(weft_pinned_alloc(N * sizeof(int), (void **)&a.pin));
  EXPECT_OK(weft_task_join(spawn_on(rt, wdev, fill_task, &a)));
  j.dev_a = a.src;
  EXPECT_OK(weft_task_spawn(rt, &j.writer, writer_task, &j, &o));
  tt_gate_wait_started(&j.gate);
  weft_task *r = spawn_on(rt, rdev, after_task, &j);
  tt_sleep_ms(20);
  EXPECT_MSG(!tt_task_returned(r) && *j.out == -1,
             "a task on device %d ordered after one on %d ran before the "
             "gate opened (saw %d)",
             rdev, wdev, *j.out);
  tt_gate_open(&j.gate);
  EXPECT_OK(weft_task_join(r));
  EXPECT_OK(weft_task_join(j.writer));
  EXPECT_MSG(*j.out == 41 + wdev, "device %d after %d: saw %d, want %d", rdev,
             wdev, *j.out, 41 + wdev);
  EXPECT_EQ_INT(tt_gate_state(&j.gate), TEST_SPIN_RELEASED);
  EXPECT_OK(weft_task_join(spawn_on(rt, wdev, free_task, &a)));
  EXPECT_OK(weft_pinned_free(a.pin));
  EXPECT_OK(weft_pinned_free(j.out));
  tt_gate_fini(&j.gate);
}

/* weft_event_wait: a task on one device records after its gated work; a
 * task on another waits for the event, then writes pinned memory. */
typedef struct event_job {
  tt_gate gate;
  weft_event *ev;
  int *out; /* pinned */
  int recorded;
} event_job;

static void record_task(void *arg) {
  event_job *j = arg;
  EXPECT_OK(weft_event_create(&j->ev)); /* on this task's device */
  tt_gate_launch(&j->gate);
  EXPECT_OK(weft_event_record(j->ev));
  tt_store(&j->recorded, 1);
}

static void wait_task(void *arg) {
  event_job *j = arg;
  while (!tt_load(&j->recorded))
    weft_yield();
  EXPECT_OK(weft_event_wait(j->ev));
  int *p = j->out, v = 7;
  void *args[] = {&p, &v};
  EXPECT_OK(weft_launch(&tk.set_value, WEFT_DIM1(1), WEFT_DIM1(1), 0, args));
  EXPECT_OK(weft_sync());
}

/* An event on this task's device, recorded and complete. */
static void make_event_task(void *arg) {
  weft_event **ev = arg;
  EXPECT_OK(weft_event_create(ev));
  EXPECT_OK(weft_event_record(*ev));
  EXPECT_OK(weft_event_sync(*ev));
}

static void event_across(weft_runtime *rt, int rdev, int wdev) {
  event_job j = {0};
  tt_gate_init(&j.gate);
  EXPECT_OK(weft_pinned_alloc(sizeof(int), (void **)&j.out));
  *j.out = 0;
  weft_task *rec = spawn_on(rt, rdev, record_task, &j);
  tt_gate_wait_started(&j.gate);
  weft_task *w = spawn_on(rt, wdev, wait_task, &j);
  tt_sleep_ms(20);
  EXPECT_MSG(tt_load(j.out) == 0,
             "device %d's work ran before device %d's event completed", wdev,
             rdev);
  tt_gate_open(&j.gate);
  EXPECT_OK(weft_task_join(w));
  EXPECT_OK(weft_task_join(rec));
  EXPECT_EQ_INT(*j.out, 7);
  /* Two devices' events make no interval. */
  if (rdev != wdev) {
    weft_event *other = NULL;
    weft_task *o = spawn_on(rt, wdev, make_event_task, &other);
    EXPECT_OK(weft_task_join(o));
    float ms = -1.0f;
    EXPECT_ERR(weft_event_elapsed_ms(j.ev, other, &ms), WEFT_EINVAL);
    EXPECT(ms == -1.0f);
    EXPECT(strstr(weft_last_error_message(), "devices") != NULL);
    EXPECT_OK(weft_event_destroy(&other));
  }
  EXPECT_OK(weft_event_destroy(&j.ev));
  EXPECT_OK(weft_pinned_free(j.out));
  tt_gate_fini(&j.gate);
}

/* ---- weft_device_sync from a task on each device ---- */

static void sync_task(void *arg) {
  int *p = arg, v = 1 + weft_task_device();
  void *args[] = {&p, &v};
  EXPECT_OK(weft_launch(&tk.set_value, WEFT_DIM1(1), WEFT_DIM1(1), 0, args));
  EXPECT_OK(weft_device_sync());
  EXPECT_EQ_INT(*p, v); /* its device, drained */
}

/* ---- devices run independently ---- */

static void gated_task(void *arg) { tt_gate_launch(arg); }

static void beside_task(void *arg) {
  int *p = arg, v = 9;
  void *args[] = {&p, &v};
  EXPECT_OK(weft_launch(&tk.set_value, WEFT_DIM1(1), WEFT_DIM1(1), 0, args));
  EXPECT_OK(weft_sync());
}

/* One executor thread per device on the host backend: device 0's kernel
 * spins behind a closed gate, and device 1's work still runs and
 * completes, as on two GPUs. */
static void independent(void) {
  weft_runtime_opts ro;
  weft_runtime_opts_init(&ro);
  ro.host_devices = 2;
  ro.host_threads = 1;
  weft_runtime *rt = tt_open(&ro);
  int n = 0;
  EXPECT_OK(weft_device_count(rt, &n));
  if (n < 2) { /* one real GPU: nothing to show */
    tt_close(rt);
    return;
  }
  tt_gate g;
  tt_gate_init(&g);
  int *flag;
  EXPECT_OK(weft_pinned_alloc(sizeof(int), (void **)&flag));
  *flag = 0;
  weft_task *a = spawn_on(rt, 0, gated_task, &g);
  tt_gate_wait_started(&g);
  EXPECT_OK(weft_task_join(spawn_on(rt, 1, beside_task, flag)));
  EXPECT_MSG(*flag == 9 && tt_gate_state(&g) == TEST_SPIN_STARTED,
             "device 1's work waited for device 0's (flag %d, gate %d)", *flag,
             tt_gate_state(&g));
  tt_gate_open(&g);
  EXPECT_OK(weft_task_join(a));
  EXPECT_OK(weft_pinned_free(flag));
  tt_gate_fini(&g);
  tt_close(rt);
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
  for (int from = 0; from < ndev; from++)
    for (int to = 0; to < ndev; to++) {
      int direct = -1;
      EXPECT_OK(weft_device_peer(rt, from, to, &direct));
      EXPECT(direct == 0 || direct == 1);
      if (from == to || weft_runtime_backend(rt) == WEFT_BACKEND_HOST)
        EXPECT_EQ_INT(direct, 1);
      copies(rt, from, to);
    }
  int direct;
  EXPECT_ERR(weft_device_peer(rt, 0, ndev, &direct), WEFT_ENODEV);
  EXPECT_ERR(weft_device_peer(rt, -1, 0, &direct), WEFT_ENODEV);
  EXPECT_ERR(weft_device_peer(rt, 0, 0, NULL), WEFT_EINVAL);
  EXPECT_ERR(weft_device_peer(NULL, 0, 0, &direct), WEFT_EINVAL);
  for (int d = 0; d < ndev; d++) {
    order_after(rt, d, (d + 1) % ndev);
    event_across(rt, d, (d + ndev - 1) % ndev);
  }
  int *flags;
  EXPECT_OK(weft_pinned_alloc(MAXDEV * sizeof(int), (void **)&flags));
  memset(flags, 0, MAXDEV * sizeof(int));
  /* One at a time: beside another live task, weft_device_sync is an
   * implicit synchronisation that weft check rightly reports. */
  for (int d = 0; d < ndev; d++)
    EXPECT_OK(weft_task_join(spawn_on(rt, d, sync_task, &flags[d])));
  EXPECT_OK(weft_pinned_free(flags));
  tt_close(rt);
  independent();
  printf("ok: %d device%s\n", ndev, ndev == 1 ? "" : "s");
  return 0;
}
