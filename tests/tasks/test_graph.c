/* Graphs (weft/graph.h) on every backend: a capture records and runs
 * nothing; a replay runs the recorded chain (axpb maps do not commute, so
 * a wrong order shows); a capture survives its task yielding between
 * workers; each call that cannot be captured is refused with WEFT_ESTATE
 * and the capture goes on; memory a live graph uses cannot be freed; an
 * update swaps the buffers and refuses another shape; replays of one graph
 * from two tasks run one after another; a task that returns with a capture
 * open is failed; handles are checked, a stale one never names the graph
 * made after it, and a destroy racing launches from other threads leaves
 * them refused, not crashed; memory of a destroyed graph whose replays
 * are done frees at once, whichever task's sweep retires the graph;
 * an update keeps the old buffers until the replays queued before it are
 * done, and never races a launch of the same graph; a pointer into an
 * allocation holds the whole allocation; an update or a capture in which
 * a step's call was refused makes nothing and leaves the graph and the
 * memory it holds as they were; memory freed, or a graph
 * destroyed, while the stream that used it captures waits for the work
 * queued before the capture; shutdown waits for graphs. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "task_common.h"

enum { N = 3000, STEPS = 6 };

static const float A[STEPS] = {2, -1, 1, -2, 1, 2};
static const float B[STEPS] = {1, 3, -2, 0, 5, -1};

static void launch_axpb(float *d, int n, float a, float b) {
  void *args[] = {&d, &n, &a, &b};
  unsigned blocks = (unsigned)((n + TEST_THREADS - 1) / TEST_THREADS);
  EXPECT_OK(weft_launch(&tk.axpb, WEFT_DIM1(blocks), WEFT_DIM1(TEST_THREADS), 0,
                        args));
}

/* in -> d, the chain on d (yielding between steps if asked), d -> out. */
static void record_chain(float *in, float *d, float *out, int yield) {
  EXPECT_OK(weft_copy(d, in, N * sizeof(float)));
  for (int k = 0; k < STEPS; k++) {
    launch_axpb(d, N, A[k], B[k]);
    if (yield)
      weft_yield();
  }
  EXPECT_OK(weft_copy(out, d, N * sizeof(float)));
}

static float expect(float x) {
  for (int k = 0; k < STEPS; k++)
    x = x * A[k] + B[k];
  return x;
}

static void fill(float *in, float *out, int seed) {
  for (int i = 0; i < N; i++) {
    in[i] = (float)((i * 7 + seed) % 11 - 5);
    out[i] = 1e30f;
  }
}

static void check_out(const float *in, const float *out, const char *what) {
  for (int i = 0; i < N; i++)
    EXPECT_MSG(out[i] == expect(in[i]), "%s: out[%d] = %g, want %g", what, i,
               (double)out[i], (double)expect(in[i]));
}

typedef struct bufs {
  float *in, *out, *d;
} bufs;

static void bufs_alloc(bufs *b) {
  EXPECT_OK(weft_pinned_alloc(N * sizeof(float), (void **)&b->in));
  EXPECT_OK(weft_pinned_alloc(N * sizeof(float), (void **)&b->out));
  EXPECT_OK(weft_device_alloc(N * sizeof(float), (void **)&b->d));
}

static void bufs_free(bufs *b) {
  EXPECT_OK(weft_pinned_free(b->in));
  EXPECT_OK(weft_pinned_free(b->out));
  EXPECT_OK(weft_device_free(b->d));
}

/* Capture, nothing runs; replays with fresh input each time. */
static void basic_task(void *arg) {
  int yield = *(int *)arg;
  bufs b;
  bufs_alloc(&b);
  fill(b.in, b.out, 1);
  weft_graph *g;
  EXPECT_OK(weft_graph_begin());
  record_chain(b.in, b.d, b.out, yield);
  EXPECT_OK(weft_graph_end(&g));
  EXPECT_OK(weft_sync());
  EXPECT_MSG(b.out[0] == 1e30f, "the captured work ran during the capture");
  weft_graph_info info;
  EXPECT_OK(weft_graph_get_info(g, &info));
  EXPECT_MSG(info.kernels == STEPS && info.copies == 2 &&
                 info.ops == STEPS + 2 && info.refs == 3,
             "info: %zu ops, %zu kernels, %zu copies, %zu refs", info.ops,
             info.kernels, info.copies, info.refs);
  for (int r = 0; r < 3; r++) {
    fill(b.in, b.out, 10 + r);
    EXPECT_OK(weft_graph_launch(g));
    EXPECT_OK(weft_sync());
    check_out(b.in, b.out,
              yield ? "replay (captured across yields)" : "replay");
  }
  /* Memory the graph uses is held busy until it is destroyed. */
  EXPECT_ERR(weft_device_free(b.d), WEFT_EBUSY);
  EXPECT_ERR(weft_pinned_free(b.in), WEFT_EBUSY);
  EXPECT_OK(weft_graph_destroy(g));
  EXPECT_ERR(weft_graph_destroy(g), WEFT_EHANDLE);
  EXPECT_ERR(weft_graph_launch(g), WEFT_EHANDLE);
  bufs_free(&b);
}

static void other_task(void *arg) { (void)arg; }

/* Every call that cannot be captured: refused, and the capture goes on. */
static void refusals_task(void *arg) {
  weft_runtime *rt = arg;
  bufs b;
  bufs_alloc(&b);
  fill(b.in, b.out, 2);
  weft_event *ev;
  EXPECT_OK(weft_event_create(&ev));
  EXPECT_OK(weft_event_record(ev));
  weft_task *other;
  EXPECT_OK(weft_task_spawn(rt, &other, other_task, NULL, NULL));
  weft_graph *prev;
  EXPECT_OK(weft_graph_begin());
  EXPECT_OK(weft_graph_end(&prev)); /* an empty graph is a graph */
  float *pageable = malloc(N * sizeof(float));
  EXPECT(pageable != NULL);
  void *p;

  EXPECT_OK(weft_graph_begin());
  EXPECT_OK(weft_copy(b.d, b.in, N * sizeof(float)));
  EXPECT_ERR(weft_sync(), WEFT_ESTATE);
  EXPECT_ERR(weft_event_record(ev), WEFT_ESTATE);
  EXPECT_ERR(weft_event_wait(ev), WEFT_ESTATE);
  EXPECT_ERR(weft_event_sync(ev), WEFT_ESTATE);
  EXPECT_ERR(weft_task_after(other), WEFT_ESTATE);
  EXPECT_ERR(weft_device_alloc(64, &p), WEFT_ESTATE);
  EXPECT_ERR(weft_device_free(b.d), WEFT_ESTATE);
  EXPECT_ERR(weft_pinned_free(b.in), WEFT_ESTATE);
  EXPECT_ERR(weft_device_sync(), WEFT_ESTATE);
  if (weft_runtime_backend(rt) == WEFT_BACKEND_CUDA) {
    /* Staged through pinned buffers on CUDA; the host backend has no
     * pageable memory to stage. */
    EXPECT_ERR(weft_copy(pageable, b.d, N * sizeof(float)), WEFT_ESTATE);
    EXPECT_ERR(weft_copy(b.d, pageable, N * sizeof(float)), WEFT_ESTATE);
  }
  EXPECT_ERR(weft_map_chunks(pageable, 64, pageable, 64, 4, NULL, NULL, NULL),
             WEFT_EINVAL); /* no fn: its own check comes first */
  EXPECT_ERR(weft_graph_begin(), WEFT_ESTATE);
  EXPECT_ERR(weft_graph_launch(prev), WEFT_ESTATE);
  EXPECT(strstr(weft_last_error_message(), "graph") != NULL);
  for (int k = 0; k < STEPS; k++)
    launch_axpb(b.d, N, A[k], B[k]);
  EXPECT_OK(weft_copy(b.out, b.d, N * sizeof(float)));
  weft_graph *g;
  EXPECT_OK(weft_graph_end(&g));
  EXPECT_OK(weft_graph_launch(g));
  EXPECT_OK(weft_sync()); /* none of the refusals is reported again */
  check_out(b.in, b.out, "after the refusals");

  weft_graph *none = g;
  EXPECT_ERR(weft_graph_end(&none), WEFT_ESTATE); /* none open */
  EXPECT(none == g); /* a failure leaves the output (error.h) */
  EXPECT_ERR(weft_graph_update(g), WEFT_ESTATE);
  EXPECT_ERR(weft_graph_launch(NULL), WEFT_EINVAL);
  EXPECT_ERR(weft_graph_end(NULL), WEFT_ESTATE);
  EXPECT_OK(weft_graph_destroy(g));
  EXPECT_OK(weft_graph_destroy(prev));
  EXPECT_OK(weft_task_join(other));
  EXPECT_OK(weft_event_destroy(&ev));
  free(pageable);
  bufs_free(&b);
}

/* An update swaps buffers; another shape is refused, the graph kept. */
/* Steps whose calls are refused inside a capture: the capture makes no
 * graph, and an update with it leaves the graph as it was. */
static unsigned char *step_buf;

static void refused_step(void *arg) {
  (void)arg;
  EXPECT_OK(weft_memset(step_buf, 2, 16));
  EXPECT_ERR(weft_sync(), WEFT_ESTATE);
}

static void nesting_step(void *arg) {
  weft_graph *g = (weft_graph *)arg, *none = NULL;
  int which = g ? 0 : 1;
  if (which == 0)
    EXPECT_ERR(weft_graph_update(g), WEFT_ESTATE);
  else
    EXPECT_ERR(weft_graph_end(&none), WEFT_ESTATE);
  EXPECT_ERR(weft_graph_begin(), WEFT_ESTATE);
}

static void spawn_step(weft_runtime *rt, weft_task_fn fn, void *arg) {
  weft_access acc = {step_buf, 16, WEFT_WRITE};
  weft_task_opts o;
  weft_task_opts_init(&o);
  o.accesses = &acc;
  o.naccesses = 1;
  EXPECT_OK(weft_task_spawn(rt, NULL, fn, arg, &o));
}

static void failed_updates(weft_runtime *rt, weft_graph *g, bufs *b2) {
  unsigned char host[16];
  EXPECT_OK(weft_device_alloc(16, (void **)&step_buf));
  for (int round = 0; round < 2; round++) {
    EXPECT_OK(weft_graph_begin());
    spawn_step(rt, round == 0 ? refused_step : nesting_step, g);
    EXPECT_ERR(weft_graph_update(g), WEFT_ESTATE);
    EXPECT_MSG(strstr(weft_last_error_message(), "no graph was made") != NULL,
               "%s", weft_last_error_message());
    EXPECT_OK(weft_memset(step_buf, 0, 16));
    fill(b2->in, b2->out, 7 + round);
    EXPECT_OK(weft_graph_launch(g));
    EXPECT_OK(weft_copy(host, step_buf, sizeof host));
    EXPECT_OK(weft_sync());
    check_out(b2->in, b2->out, "replay after a failed update");
    EXPECT_MSG(host[0] == 0, "a failed update's step ran in the replay (%d)",
               host[0]);
    EXPECT_ERR(weft_device_free(b2->d), WEFT_EBUSY);
  }
  /* weft_graph_end inside a step spoils the capture as well. */
  weft_graph *none = NULL;
  EXPECT_OK(weft_graph_begin());
  spawn_step(rt, nesting_step, NULL);
  EXPECT_ERR(weft_graph_end(&none), WEFT_ESTATE);
  EXPECT(none == NULL);
  /* Nothing held the step's buffer. */
  EXPECT_OK(weft_device_free(step_buf));
}

static void update_task(void *arg) {
  weft_runtime *rt = arg;
  bufs b1, b2;
  bufs_alloc(&b1);
  bufs_alloc(&b2);
  weft_graph *g;
  EXPECT_OK(weft_graph_begin());
  record_chain(b1.in, b1.d, b1.out, 0);
  EXPECT_OK(weft_graph_end(&g));
  EXPECT_OK(weft_graph_begin());
  record_chain(b2.in, b2.d, b2.out, 0);
  EXPECT_OK(weft_graph_update(g));
  fill(b1.in, b1.out, 3);
  fill(b2.in, b2.out, 4);
  EXPECT_OK(weft_graph_launch(g));
  EXPECT_OK(weft_sync());
  check_out(b2.in, b2.out, "replay after the update");
  EXPECT_MSG(b1.out[0] == 1e30f, "the updated graph still wrote the old "
                                 "buffers");
  /* The old buffers are free to go, the new ones are held. */
  bufs_free(&b1);
  EXPECT_ERR(weft_device_free(b2.d), WEFT_EBUSY);
  /* Another shape: one more launch. */
  EXPECT_OK(weft_graph_begin());
  record_chain(b2.in, b2.d, b2.out, 0);
  launch_axpb(b2.d, N, 1, 0);
  EXPECT_ERR(weft_graph_update(g), WEFT_EINVAL);
  fill(b2.in, b2.out, 5);
  EXPECT_OK(weft_graph_launch(g));
  EXPECT_OK(weft_sync());
  check_out(b2.in, b2.out, "replay after a refused update");
  failed_updates(rt, g, &b2);
  EXPECT_OK(weft_graph_destroy(g));
  bufs_free(&b2);
}

/* Replays of one graph from two tasks: each adds 1 to one float, a
 * read-modify-write that loses updates if two replays overlap. */
typedef struct shared_graph {
  weft_graph *g;
  int rounds;
} shared_graph;

static void replay_task(void *arg) {
  shared_graph *s = arg;
  for (int r = 0; r < s->rounds; r++) {
    EXPECT_OK(weft_graph_launch(s->g));
    if (r % 8 == 7)
      weft_yield();
  }
  EXPECT_OK(weft_sync());
}

static void ordered_task(void *arg) {
  weft_runtime *rt = arg;
  float *d, *host;
  EXPECT_OK(weft_device_alloc(sizeof(float), (void **)&d));
  EXPECT_OK(weft_pinned_alloc(sizeof(float), (void **)&host));
  EXPECT_OK(weft_memset(d, 0, sizeof(float)));
  EXPECT_OK(weft_sync());
  shared_graph s = {NULL, tt_quick() ? 20 : 100};
  EXPECT_OK(weft_graph_begin());
  launch_axpb(d, 1, 1, 1);
  EXPECT_OK(weft_graph_end(&s.g));
  weft_task *t[2];
  for (int i = 0; i < 2; i++)
    EXPECT_OK(weft_task_spawn(rt, &t[i], replay_task, &s, NULL));
  for (int i = 0; i < 2; i++)
    EXPECT_OK(weft_task_join(t[i]));
  EXPECT_OK(weft_copy(host, d, sizeof(float)));
  EXPECT_OK(weft_sync());
  EXPECT_MSG(*host == (float)(2 * s.rounds),
             "two tasks' replays of one graph overlapped: %g of %d increments",
             (double)*host, 2 * s.rounds);
  EXPECT_OK(weft_graph_destroy(s.g));
  EXPECT_OK(weft_device_free(d));
  EXPECT_OK(weft_pinned_free(host));
}

/* Returns with a capture open: the task fails, nothing leaks. */
static void forgetful_task(void *arg) {
  float *d = arg;
  EXPECT_OK(weft_graph_begin());
  launch_axpb(d, N, 2, 1);
}

/* A graph of one kernel on d. */
static weft_graph *small_graph(float *d) {
  weft_graph *g;
  EXPECT_OK(weft_graph_begin());
  launch_axpb(d, N, 1, 1);
  EXPECT_OK(weft_graph_end(&g));
  return g;
}

/* A handle kept past its graph's destroy names no graph, even once a new
 * graph took the old one's memory. */
static void stale_handles(void) {
  float *d;
  EXPECT_OK(weft_device_alloc(N * sizeof(float), (void **)&d));
  for (int i = 0; i < 100; i++) {
    weft_graph *old = small_graph(d);
    EXPECT_OK(weft_graph_destroy(old));
    weft_graph *g = small_graph(d);
    EXPECT_ERR(weft_graph_launch(old), WEFT_EHANDLE);
    EXPECT_ERR(weft_graph_destroy(old), WEFT_EHANDLE);
    weft_graph_info info;
    EXPECT_ERR(weft_graph_get_info(old, &info), WEFT_EHANDLE);
    /* An update refused for its handle still ends the capture. */
    EXPECT_OK(weft_graph_begin());
    launch_axpb(d, N, 2, 0);
    EXPECT_ERR(weft_graph_update(old), WEFT_EHANDLE);
    weft_graph *none = NULL;
    EXPECT_ERR(weft_graph_end(&none), WEFT_ESTATE);
    EXPECT(none == NULL);
    EXPECT_OK(weft_graph_launch(g)); /* the newer graph is untouched */
    EXPECT_OK(weft_sync());
    EXPECT_OK(weft_graph_destroy(g));
  }
  EXPECT_OK(weft_device_free(d));
}

typedef struct racer {
  weft_graph *g;
  atomic_int launched;
  atomic_int refused; /* set by the launching threads */
} racer;

/* Launches g from a plain thread until it is refused. */
static void *launch_until_refused(void *arg) {
  racer *r = arg;
  for (;;) {
    int rc = weft_graph_launch(r->g);
    if (rc == WEFT_EHANDLE) {
      atomic_store(&r->refused, 1);
      break;
    }
    EXPECT_OK(rc);
    atomic_fetch_add(&r->launched, 1);
  }
  EXPECT_OK(weft_sync());
  return NULL;
}

/* weft_graph_destroy while other threads launch the same graph: each
 * launch either runs or is refused with WEFT_EHANDLE. */
static void destroy_racing_launches(void) {
  float *d;
  EXPECT_OK(weft_device_alloc(N * sizeof(float), (void **)&d));
  for (int round = 0; round < 20; round++) {
    racer r = {.g = small_graph(d)};
    pthread_t th[3];
    for (int i = 0; i < 3; i++)
      EXPECT(pthread_create(&th[i], NULL, launch_until_refused, &r) == 0);
    while (atomic_load(&r.launched) < 3 * (round % 4 + 1))
      sched_yield();
    EXPECT_OK(weft_graph_destroy(r.g));
    for (int i = 0; i < 3; i++)
      EXPECT(pthread_join(th[i], NULL) == 0);
    EXPECT(atomic_load(&r.refused));
  }
  EXPECT_OK(weft_sync());
  EXPECT_OK(weft_device_free(d));
}

/* A graph destroyed while its replay is still queued behind a closed
 * gate on another task's stream: freeing its memory and allocating again
 * must not hand out memory the replay will still write (issue 37). */
typedef struct queued_replay {
  weft_graph *g;
  tt_gate gate;
  int queued, go;
} queued_replay;

static void gated_replay_task(void *arg) {
  queued_replay *q = arg;
  tt_gate_launch(&q->gate);
  EXPECT_OK(weft_graph_launch(q->g));
  atomic_store((_Atomic int *)&q->queued, 1);
  while (!atomic_load((_Atomic int *)&q->go))
    weft_yield();
  EXPECT_OK(weft_sync());
}

static void replay_outlives_destroy(weft_runtime *rt) {
  enum { BYTES = 4096 };
  queued_replay q = {0};
  tt_gate_init(&q.gate);
  unsigned char *d, *host;
  EXPECT_OK(weft_device_alloc(BYTES, (void **)&d));
  EXPECT_OK(weft_pinned_alloc(BYTES, (void **)&host));
  EXPECT_OK(weft_graph_begin());
  EXPECT_OK(weft_memset(d, 0xAA, BYTES));
  EXPECT_OK(weft_graph_end(&q.g));
  weft_task *t;
  EXPECT_OK(weft_task_spawn(rt, &t, gated_replay_task, &q, NULL));
  tt_wait_flag(&q.queued, 10000, "the replay queued");
  EXPECT_OK(weft_graph_destroy(q.g));
  EXPECT_OK(weft_device_free(d));
  unsigned char *d2;
  EXPECT_OK(weft_device_alloc(BYTES, (void **)&d2));
  EXPECT_OK(weft_memset(d2, 0x11, BYTES));
  tt_gate_open(&q.gate);
  atomic_store((_Atomic int *)&q.go, 1);
  EXPECT_OK(weft_task_join(t));
  EXPECT_OK(weft_copy(host, d2, BYTES));
  EXPECT_OK(weft_sync());
  int bad = 0;
  for (int i = 0; i < BYTES; i++)
    bad += host[i] != 0x11;
  EXPECT_MSG(bad == 0,
             "%d of %d bytes of a new allocation overwritten by the replay "
             "of a graph destroyed before (d %p, d2 %p)",
             bad, BYTES, (void *)d, (void *)d2);
  EXPECT_OK(weft_device_free(d2));
  EXPECT_OK(weft_pinned_free(host));
  tt_gate_fini(&q.gate);
}

/* The same for an update: the replay queued before it still writes the
 * old buffers (device memory, a pinned block), which must not be handed
 * out again meanwhile. */
static void replay_outlives_update(weft_runtime *rt, int pinned) {
  enum { BYTES = 4096 };
  queued_replay q = {0};
  tt_gate_init(&q.gate);
  unsigned char *src, *old, *fresh, *host;
  EXPECT_OK(weft_device_alloc(BYTES, (void **)&src));
  EXPECT_OK(weft_memset(src, 0xAA, BYTES));
  EXPECT_OK(weft_pinned_alloc(BYTES, (void **)&host));
  if (pinned) {
    EXPECT_OK(weft_pinned_alloc(BYTES, (void **)&old));
    EXPECT_OK(weft_pinned_alloc(BYTES, (void **)&fresh));
  } else {
    EXPECT_OK(weft_device_alloc(BYTES, (void **)&old));
    EXPECT_OK(weft_device_alloc(BYTES, (void **)&fresh));
  }
  EXPECT_OK(weft_sync());
  EXPECT_OK(weft_graph_begin());
  EXPECT_OK(weft_copy(old, src, BYTES));
  EXPECT_OK(weft_graph_end(&q.g));
  weft_task *t;
  EXPECT_OK(weft_task_spawn(rt, &t, gated_replay_task, &q, NULL));
  tt_wait_flag(&q.queued, 10000, "the replay queued");
  EXPECT_OK(weft_graph_begin());
  EXPECT_OK(weft_copy(fresh, src, BYTES));
  EXPECT_OK(weft_graph_update(q.g));
  unsigned char *again;
  if (pinned) {
    EXPECT_OK(weft_pinned_free(old));
    EXPECT_OK(weft_pinned_alloc(BYTES, (void **)&again));
    memset(again, 0x11, BYTES);
  } else {
    EXPECT_OK(weft_device_free(old));
    EXPECT_OK(weft_device_alloc(BYTES, (void **)&again));
    EXPECT_OK(weft_memset(again, 0x11, BYTES));
  }
  tt_gate_open(&q.gate);
  atomic_store((_Atomic int *)&q.go, 1);
  EXPECT_OK(weft_task_join(t));
  if (!pinned)
    EXPECT_OK(weft_copy(host, again, BYTES));
  EXPECT_OK(weft_sync());
  const unsigned char *seen = pinned ? again : host;
  int bad = 0;
  for (int i = 0; i < BYTES; i++)
    bad += seen[i] != 0x11;
  EXPECT_MSG(bad == 0,
             "%d of %d bytes of a new %s allocation overwritten by a replay "
             "queued before the update (old %p, new %p)",
             bad, BYTES, pinned ? "pinned" : "device", (void *)old,
             (void *)again);
  EXPECT_OK(weft_graph_destroy(q.g));
  if (pinned) {
    EXPECT_OK(weft_pinned_free(again));
    EXPECT_OK(weft_pinned_free(fresh));
  } else {
    EXPECT_OK(weft_device_free(again));
    EXPECT_OK(weft_device_free(fresh));
  }
  EXPECT_OK(weft_pinned_free(host));
  EXPECT_OK(weft_device_free(src));
  tt_gate_fini(&q.gate);
}

/* A task queues a copy into a pinned block (or a replay of a graph
 * writing device memory) behind a gate, then begins a capture; meanwhile
 * the block is freed (the graph destroyed and its memory freed) from the
 * main thread: the work queued before the capture still writes it, so a
 * new allocation must not get it before the gate opens. */
typedef struct capturer {
  tt_gate gate;
  unsigned char *pinned, *src;
  weft_graph *g;
  int captured, go;
} capturer;

static void capturer_task(void *arg) {
  capturer *q = arg;
  tt_gate_launch(&q->gate);
  if (q->g)
    EXPECT_OK(weft_graph_launch(q->g));
  else
    EXPECT_OK(weft_copy(q->pinned, q->src, 4096));
  EXPECT_OK(weft_graph_begin());
  atomic_store((_Atomic int *)&q->captured, 1);
  while (!atomic_load((_Atomic int *)&q->go))
    weft_yield();
  weft_graph *g2;
  EXPECT_OK(weft_graph_end(&g2));
  EXPECT_OK(weft_graph_destroy(g2));
  EXPECT_OK(weft_sync());
}

static void freed_while_capturing(weft_runtime *rt, int graph) {
  enum { BYTES = 4096 };
  capturer q = {0};
  tt_gate_init(&q.gate);
  unsigned char *host, *d = NULL, *again;
  EXPECT_OK(weft_device_alloc(BYTES, (void **)&q.src));
  EXPECT_OK(weft_memset(q.src, 0xAA, BYTES));
  EXPECT_OK(weft_pinned_alloc(BYTES, (void **)&host));
  if (graph) {
    EXPECT_OK(weft_device_alloc(BYTES, (void **)&d));
    EXPECT_OK(weft_graph_begin());
    EXPECT_OK(weft_memset(d, 0xAA, BYTES));
    EXPECT_OK(weft_graph_end(&q.g));
  } else {
    EXPECT_OK(weft_pinned_alloc(BYTES, (void **)&q.pinned));
  }
  EXPECT_OK(weft_sync());
  weft_task *t;
  EXPECT_OK(weft_task_spawn(rt, &t, capturer_task, &q, NULL));
  tt_wait_flag(&q.captured, 10000, "the capture began");
  if (graph) {
    EXPECT_OK(weft_graph_destroy(q.g));
    EXPECT_OK(weft_device_free(d));
    EXPECT_OK(weft_device_alloc(BYTES, (void **)&again));
    EXPECT_OK(weft_memset(again, 0x11, BYTES));
  } else {
    EXPECT_OK(weft_pinned_free(q.pinned));
    EXPECT_OK(weft_pinned_alloc(BYTES, (void **)&again));
    memset(again, 0x11, BYTES);
  }
  tt_gate_open(&q.gate);
  atomic_store((_Atomic int *)&q.go, 1);
  EXPECT_OK(weft_task_join(t));
  if (graph)
    EXPECT_OK(weft_copy(host, again, BYTES));
  EXPECT_OK(weft_sync());
  const unsigned char *seen = graph ? host : again;
  int bad = 0;
  for (int i = 0; i < BYTES; i++)
    bad += seen[i] != 0x11;
  EXPECT_MSG(bad == 0,
             "%d of %d bytes of a new %s allocation overwritten by work "
             "queued before a capture on the stream that used the old one",
             bad, BYTES, graph ? "device" : "pinned");
  if (graph)
    EXPECT_OK(weft_device_free(again));
  else
    EXPECT_OK(weft_pinned_free(again));
  EXPECT_OK(weft_pinned_free(host));
  EXPECT_OK(weft_device_free(q.src));
  tt_gate_fini(&q.gate);
}

/* The same through a data-flow step's branch (on CUDA a stream leased
 * while the capture runs): a plain thread queues a gated copy into a
 * pinned block and exits, its stream goes back to the pool, and a step
 * leases it as its branch. A free of the block meanwhile must wait for
 * the copy queued before the branch joined the capture. */
typedef struct brancher {
  weft_runtime *rt;
  unsigned char *pinned, *src, *scratch;
  tt_gate *gate;
  int ready, go, captured, done;
} brancher;

static void *gated_copy_thread(void *arg) {
  brancher *b = arg;
  tt_gate_launch(b->gate);
  EXPECT_OK(weft_copy(b->pinned, b->src, 4096));
  return NULL; /* its stream, work still queued, goes back to the pool */
}

static void held_step(void *arg) {
  brancher *b = arg;
  atomic_store((_Atomic int *)&b->captured, 1);
  while (!atomic_load((_Atomic int *)&b->done))
    weft_yield();
}

static void branch_capturer_task(void *arg) {
  brancher *b = arg;
  EXPECT_OK(weft_memset(b->scratch, 0, 4096)); /* leases its own stream */
  atomic_store((_Atomic int *)&b->ready, 1);
  while (!atomic_load((_Atomic int *)&b->go))
    weft_yield();
  EXPECT_OK(weft_graph_begin());
  weft_access acc = {b->scratch, 4096, WEFT_RW};
  weft_task_opts o;
  weft_task_opts_init(&o);
  o.accesses = &acc;
  o.naccesses = 1;
  weft_task *none;
  EXPECT_OK(weft_task_spawn(b->rt, &none, held_step, b, &o));
  weft_graph *g;
  EXPECT_OK(weft_graph_end(&g));
  EXPECT_OK(weft_graph_destroy(g));
  EXPECT_OK(weft_sync());
}

static void freed_while_branch_captures(weft_runtime *rt) {
  enum { BYTES = 4096 };
  tt_gate gate;
  tt_gate_init(&gate);
  brancher b = {.rt = rt, .gate = &gate};
  unsigned char *again;
  EXPECT_OK(weft_device_alloc(BYTES, (void **)&b.src));
  EXPECT_OK(weft_device_alloc(BYTES, (void **)&b.scratch));
  EXPECT_OK(weft_memset(b.src, 0xAA, BYTES));
  EXPECT_OK(weft_pinned_alloc(BYTES, (void **)&b.pinned));
  EXPECT_OK(weft_sync());
  weft_task *t;
  EXPECT_OK(weft_task_spawn(rt, &t, branch_capturer_task, &b, NULL));
  tt_wait_flag(&b.ready, 10000, "the capturer leased its stream");
  pthread_t th;
  EXPECT(pthread_create(&th, NULL, gated_copy_thread, &b) == 0);
  EXPECT(pthread_join(th, NULL) == 0);
  atomic_store((_Atomic int *)&b.go, 1);
  tt_wait_flag(&b.captured, 10000, "the step runs in the capture");
  EXPECT_OK(weft_pinned_free(b.pinned));
  EXPECT_OK(weft_pinned_alloc(BYTES, (void **)&again));
  memset(again, 0x11, BYTES);
  tt_gate_open(&gate);
  atomic_store((_Atomic int *)&b.done, 1);
  EXPECT_OK(weft_task_join(t));
  EXPECT_OK(weft_sync());
  int bad = 0;
  for (int i = 0; i < BYTES; i++)
    bad += again[i] != 0x11;
  EXPECT_MSG(bad == 0,
             "%d of %d bytes of a new pinned allocation overwritten by a "
             "copy queued on a stream before it became a capture's branch",
             bad, BYTES);
  EXPECT_OK(weft_pinned_free(again));
  EXPECT_OK(weft_device_free(b.src));
  EXPECT_OK(weft_device_free(b.scratch));
  tt_gate_fini(&gate);
}

/* A graph that uses memory through pointers into allocations holds the
 * allocations, each once however many pointers into it the capture saw:
 * freeing them is refused while it lives. */
static void interior_pointers_hold(void) {
  enum { BYTES = 8192 };
  unsigned char *d, *p;
  EXPECT_OK(weft_device_alloc(BYTES, (void **)&d));
  EXPECT_OK(weft_pinned_alloc(BYTES, (void **)&p));
  weft_graph *g;
  EXPECT_OK(weft_graph_begin());
  EXPECT_OK(weft_memset(d + BYTES / 2, 1, BYTES / 2));
  EXPECT_OK(weft_copy(p + BYTES / 2, d + BYTES / 2, BYTES / 2));
  EXPECT_OK(weft_copy(p, d, BYTES / 2));
  EXPECT_OK(weft_graph_end(&g));
  weft_graph_info info;
  EXPECT_OK(weft_graph_get_info(g, &info));
  EXPECT_EQ_INT((int)info.refs, 2);
  EXPECT_ERR(weft_device_free(d), WEFT_EBUSY);
  EXPECT_ERR(weft_pinned_free(p), WEFT_EBUSY);
  EXPECT(strstr(weft_last_error_message(), "used by 1 live graph") != NULL);
  EXPECT_OK(weft_graph_launch(g));
  EXPECT_OK(weft_sync());
  EXPECT_OK(weft_graph_destroy(g));
  EXPECT_OK(weft_device_free(d));
  EXPECT_OK(weft_pinned_free(p));
}

/* A graph is its capturing device's: a task on another emulated device
 * may neither replay it nor update it (its operations name the first
 * device's memory). */
static void on_device_one(void *arg) {
  weft_graph *g = arg;
  EXPECT_EQ_INT(weft_task_device(), 1);
  EXPECT_ERR(weft_graph_launch(g), WEFT_EINVAL);
  EXPECT(strstr(weft_last_error_message(), "captured on device 0") != NULL);
  EXPECT_OK(weft_graph_begin());
  EXPECT_ERR(weft_graph_update(g), WEFT_EINVAL);
  EXPECT_ERR(weft_graph_end(&g), WEFT_ESTATE); /* the update ended it */
}

static void other_device(void) {
  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  o.backend = WEFT_BACKEND_HOST;
  o.host_devices = 2;
  o.workers = 2;
  weft_runtime *rt = tt_open(&o);
  unsigned char *d;
  EXPECT_OK(weft_device_alloc(64, (void **)&d));
  weft_graph *g;
  EXPECT_OK(weft_graph_begin());
  EXPECT_OK(weft_memset(d, 1, 64));
  EXPECT_OK(weft_graph_end(&g));
  weft_task_opts to;
  weft_task_opts_init(&to);
  to.device = 1;
  weft_task *t;
  EXPECT_OK(weft_task_spawn(rt, &t, on_device_one, g, &to));
  EXPECT_OK(weft_task_join(t));
  EXPECT_OK(weft_graph_launch(g)); /* device 0's caller */
  EXPECT_OK(weft_sync());
  EXPECT_OK(weft_graph_destroy(g));
  EXPECT_OK(weft_device_free(d));
  tt_close(rt);
}

/* A thread updating a graph over and over, another launching it: each
 * replay runs one version or the other, whole. */
enum { UPDATE_ROUNDS = 400, UPDATE_BYTES = 1 << 14 };
typedef struct update_race {
  weft_graph *g;
  int stop;
} update_race;

static void *update_launcher(void *arg) {
  update_race *u = arg;
  for (int i = 0; !atomic_load((_Atomic int *)&u->stop); i++) {
    EXPECT_OK(weft_graph_launch(u->g));
    if (i % 8 == 7)
      EXPECT_OK(weft_sync());
  }
  EXPECT_OK(weft_sync());
  return NULL;
}

static void update_capture(unsigned char *d, int v) {
  EXPECT_OK(weft_graph_begin());
  for (int k = 0; k < 8; k++)
    EXPECT_OK(weft_memset(d + k * (UPDATE_BYTES / 8), v, UPDATE_BYTES / 8));
}

static void updates_racing_launches(void) {
  unsigned char *d[2];
  EXPECT_OK(weft_device_alloc(UPDATE_BYTES, (void **)&d[0]));
  EXPECT_OK(weft_device_alloc(UPDATE_BYTES, (void **)&d[1]));
  update_race u = {0};
  update_capture(d[0], 1);
  EXPECT_OK(weft_graph_end(&u.g));
  pthread_t th;
  EXPECT(pthread_create(&th, NULL, update_launcher, &u) == 0);
  for (int r = 0; r < UPDATE_ROUNDS; r++) {
    update_capture(d[r & 1], r & 0xff);
    EXPECT_OK(weft_graph_update(u.g));
  }
  atomic_store((_Atomic int *)&u.stop, 1);
  pthread_join(th, NULL);
  EXPECT_OK(weft_sync());
  EXPECT_OK(weft_graph_destroy(u.g));
  EXPECT_OK(weft_device_free(d[0]));
  EXPECT_OK(weft_device_free(d[1]));
}

/* Tasks replaying and destroying graphs of their own, then freeing their
 * memory after the replays are done: another task's free or destroy may
 * be retiring the graph at that moment (graph.c's retired_sweep), and
 * the free must still find the memory released, not "used by 1 live
 * graph". */
enum { SWEEPERS = 4, SWEEP_ROUNDS = 300 };

static void sweeper_task(void *arg) {
  (void)arg;
  for (int r = 0; r < SWEEP_ROUNDS; r++) {
    float *d;
    EXPECT_OK(weft_device_alloc(N * sizeof(float), (void **)&d));
    weft_graph *g = small_graph(d);
    EXPECT_OK(weft_graph_launch(g));
    EXPECT_OK(weft_graph_destroy(g));
    EXPECT_OK(weft_sync());
    int rc = weft_device_free(d);
    EXPECT_MSG(rc == 0, "round %d: weft_device_free after the replay: %s", r,
               weft_last_error_message());
  }
}

static void frees_racing_sweeps(weft_runtime *rt) {
  weft_task *t[SWEEPERS];
  for (int i = 0; i < SWEEPERS; i++)
    EXPECT_OK(weft_task_spawn(rt, &t[i], sweeper_task, NULL, NULL));
  for (int i = 0; i < SWEEPERS; i++)
    EXPECT_OK(weft_task_join(t[i]));
}

int main(void) {
  weft_runtime *rt = tt_open_workers(4);
  frees_racing_sweeps(rt);
  replay_outlives_destroy(rt);
  replay_outlives_update(rt, 0);
  replay_outlives_update(rt, 1);
  interior_pointers_hold();
  freed_while_capturing(rt, 0);
  freed_while_capturing(rt, 1);
  freed_while_branch_captures(rt);
  updates_racing_launches();
  weft_task *t;
  if (weft_runtime_backend(rt) == WEFT_BACKEND_HOST) {
    tt_close(rt);
    other_device();
    rt = tt_open_workers(4);
  }
  int yield = 0;
  EXPECT_OK(weft_task_spawn(rt, &t, basic_task, &yield, NULL));
  EXPECT_OK(weft_task_join(t));
  yield = 1;
  EXPECT_OK(weft_task_spawn(rt, &t, basic_task, &yield, NULL));
  EXPECT_OK(weft_task_join(t));
  EXPECT_OK(weft_task_spawn(rt, &t, refusals_task, rt, NULL));
  EXPECT_OK(weft_task_join(t));
  EXPECT_OK(weft_task_spawn(rt, &t, update_task, rt, NULL));
  EXPECT_OK(weft_task_join(t));
  EXPECT_OK(weft_task_spawn(rt, &t, ordered_task, rt, NULL));
  EXPECT_OK(weft_task_join(t));

  /* A plain thread captures and replays too. */
  bufs b;
  bufs_alloc(&b);
  weft_graph *g;
  EXPECT_OK(weft_graph_begin());
  record_chain(b.in, b.d, b.out, 0);
  EXPECT_OK(weft_graph_end(&g));
  fill(b.in, b.out, 6);
  EXPECT_OK(weft_graph_launch(g));
  EXPECT_OK(weft_sync());
  check_out(b.in, b.out, "replay from a plain thread");

  float *d;
  EXPECT_OK(weft_device_alloc(N * sizeof(float), (void **)&d));
  EXPECT_OK(weft_task_spawn(rt, &t, forgetful_task, d, NULL));
  EXPECT_ERR(weft_task_join(t), WEFT_ESTATE);
  EXPECT(strstr(weft_last_error_message(), "never ended") != NULL);
  EXPECT_OK(weft_device_free(d)); /* the dropped capture held nothing */

  stale_handles();
  destroy_racing_launches();

  /* Shutdown refuses while a graph lives. */
  EXPECT_ERR(weft_shutdown(rt), WEFT_EBUSY);
  EXPECT(strstr(weft_last_error_message(), "1 graphs") != NULL);
  EXPECT_OK(weft_graph_destroy(g));
  bufs_free(&b);
  tt_close(rt);
  puts("ok");
  return 0;
}
