/* Waits that would close a cycle are refused with WEFT_EDEADLK, naming the
 * tasks, and change nothing: the task the refused call named may still be
 * joined. Which of the tasks in a cycle is refused depends on which waits
 * last, so each case checks that exactly one call of the cycle is refused
 * and that every other one returns as it should.
 *
 * - two tasks joining each other;
 * - three tasks joining round a ring;
 * - a plain thread joining a task that joins a task following it
 *   (weft_task_after), the plain thread running the first in its guest
 *   slot;
 * - a task joining one that follows it by declared data;
 * - chains and fans of joins and weft_task_after that close no cycle,
 *   round after round: none is refused.
 * Without the refusal each case hangs, and CTest's timeout fails it. */
#include <stdio.h>
#include <string.h>

#include "task_common.h"

static weft_runtime *rt;

enum { MAXN = 3 };

/* One task of a ring: joins (or follows) next, then says how it went. */
typedef struct ring_task {
  weft_task *self;
  struct ring_task *next;
  int *go;
  int follow; /* weft_task_after instead of weft_task_join */
  int rc;
  char msg[512];
  int finished;
} ring_task;

static void ring_fn(void *arg) {
  ring_task *r = arg;
  while (!tt_load(r->go))
    weft_yield();
  r->rc = r->follow ? weft_task_after(r->next->self)
                    : weft_task_join(r->next->self);
  snprintf(r->msg, sizeof r->msg, "%s", r->rc ? weft_last_error_message() : "");
  tt_store(&r->finished, 1);
}

static weft_task *spawn_named(const char *name, weft_task_fn fn, void *arg,
                              const weft_access *acc, size_t nacc) {
  weft_task_opts o;
  weft_task_opts_init(&o);
  o.name = name;
  o.accesses = acc;
  o.naccesses = nacc;
  weft_task *t = NULL;
  EXPECT_OK(weft_task_spawn(rt, &t, fn, arg, &o));
  return t;
}

/* A message names task name with its id: "task 'a' (id 7)". */
static int names(const char *msg, const char *name) {
  char want[64];
  snprintf(want, sizeof want, "task '%s' (id ", name);
  return strstr(msg, want) != NULL;
}

/* n tasks, each joining the next round a ring, spawned by this thread. */
static void ring(int n) {
  static const char *const label[MAXN] = {"a", "b", "c"};
  ring_task r[MAXN];
  int go = 0;
  memset(r, 0, sizeof r);
  for (int i = 0; i < n; i++) {
    r[i].next = &r[(i + 1) % n];
    r[i].go = &go;
    r[i].self = spawn_named(label[i], ring_fn, &r[i], NULL, 0);
  }
  tt_store(&go, 1);
  for (int i = 0; i < n; i++)
    tt_wait_flag(&r[i].finished, 60000, "a task of the ring");
  int refused = -1;
  for (int i = 0; i < n; i++) {
    if (r[i].rc == 0)
      continue;
    EXPECT_MSG(r[i].rc == WEFT_EDEADLK && refused < 0, "task %s: %d %s: %s",
               label[i], r[i].rc, weft_err_name(r[i].rc), r[i].msg);
    refused = i;
  }
  EXPECT_MSG(refused >= 0, "no join of the ring of %d was refused", n);
  const char *msg = r[refused].msg;
  EXPECT_MSG(strstr(msg, "weft_task_join") != NULL, "%s", msg);
  for (int i = 0; i < n; i++)
    EXPECT_MSG(names(msg, label[i]), "'%s' not named: %s", label[i], msg);
  /* The refused join changed nothing: the task it named is still to be
   * joined, by this thread now; every other one was joined in the ring. */
  EXPECT_OK(weft_task_join(r[refused].next->self));
  for (int i = 0; i < n; i++)
    EXPECT_ERR(weft_task_join(r[i].self), WEFT_EHANDLE);
}

/* ---- a plain thread, a task it joins, and a task following that one ---- */

typedef struct pair {
  weft_task *a_self; /* a's handle, for b (set by a before it spawns b) */
  weft_task *b;
  int a_rc, b_rc;
  char a_msg[512], b_msg[512];
} pair;

static void follower(void *arg) {
  pair *p = arg;
  p->b_rc = weft_task_after(p->a_self);
  snprintf(p->b_msg, sizeof p->b_msg, "%s",
           p->b_rc ? weft_last_error_message() : "");
}

static void joiner(void *arg) {
  pair *p = arg;
  p->a_self = weft_task_self();
  p->b = spawn_named("b", follower, p, NULL, 0);
  p->a_rc = weft_task_join(p->b);
  snprintf(p->a_msg, sizeof p->a_msg, "%s",
           p->a_rc ? weft_last_error_message() : "");
}

static void plain_thread_cycle(void) {
  pair p;
  memset(&p, 0, sizeof p);
  weft_task *a = spawn_named("a", joiner, &p, NULL, 0);
  /* This thread waits for a (running it, likely, in its guest slot) while
   * a waits for b and b for a. */
  EXPECT_OK(weft_task_join(a));
  if (p.a_rc) {
    /* a's join was refused, and b is still to be joined; b followed a,
     * which has returned. */
    EXPECT_MSG(p.a_rc == WEFT_EDEADLK, "a: %d %s", p.a_rc, p.a_msg);
    EXPECT_MSG(strstr(p.a_msg, "weft_task_join") && names(p.a_msg, "a") &&
                   names(p.a_msg, "b"),
               "%s", p.a_msg);
    EXPECT_OK(weft_task_join(p.b));
    EXPECT_EQ_INT(p.b_rc, 0);
  } else {
    /* b's weft_task_after was refused: b returned, and a's join with it. */
    EXPECT_MSG(p.b_rc == WEFT_EDEADLK, "b: %d %s", p.b_rc, p.b_msg);
    EXPECT_MSG(strstr(p.b_msg, "weft_task_after") && names(p.b_msg, "a") &&
                   names(p.b_msg, "b"),
               "%s", p.b_msg);
  }
}

/* ---- declared data: a task joining one that follows it ---- */

static float cell;

typedef struct flow {
  weft_task *b;
  int go;
  int a_rc;
  char a_msg[512];
  int b_ran;
} flow;

static void flow_a(void *arg) {
  flow *f = arg;
  while (!tt_load(&f->go))
    weft_yield();
  f->a_rc = weft_task_join(f->b);
  snprintf(f->a_msg, sizeof f->a_msg, "%s",
           f->a_rc ? weft_last_error_message() : "");
}

static void flow_b(void *arg) {
  flow *f = arg;
  tt_store(&f->b_ran, 1);
}

static void dataflow_cycle(void) {
  flow f;
  memset(&f, 0, sizeof f);
  weft_access w = {&cell, sizeof cell, WEFT_WRITE};
  weft_access r = {&cell, sizeof cell, WEFT_READ};
  weft_task *a = spawn_named("a", flow_a, &f, &w, 1);
  f.b = spawn_named("b", flow_b, &f, &r, 1); /* follows a */
  tt_store(&f.go, 1);
  EXPECT_OK(weft_task_join(a));
  /* Either a's join was refused (b waited for a first, then ran), or b
   * was (a waited for b first): b then never ran its function, and a's
   * join returned b's error, with b joined. */
  EXPECT_MSG(f.a_rc == WEFT_EDEADLK, "a: %d %s", f.a_rc, f.a_msg);
  EXPECT_MSG(names(f.a_msg, "a") && names(f.a_msg, "b"), "%s", f.a_msg);
  if (strncmp(f.a_msg, "task 'b': ", 10) == 0) {
    EXPECT(!tt_load(&f.b_ran));
  } else {
    EXPECT_MSG(strstr(f.a_msg, "weft_task_join: ") == f.a_msg, "%s", f.a_msg);
    EXPECT_OK(weft_task_join(f.b));
    EXPECT(tt_load(&f.b_ran));
  }
}

/* ---- no cycle: nothing refused ---- */

typedef struct node {
  weft_task *self;
  weft_task *join;  /* joins it, or NULL */
  weft_task *after; /* then follows it, or NULL */
  int *go;
} node;

static void node_fn(void *arg) {
  node *n = arg;
  while (!tt_load(n->go))
    weft_yield();
  if (n->after)
    EXPECT_OK(weft_task_after(n->after));
  if (n->join)
    EXPECT_OK(weft_task_join(n->join));
}

/* A chain e joins d joins c joins b joins a, while f, g and h follow
 * the links of the chain; a cycle check that followed a stale link or
 * mistook a shared target for a cycle would refuse one of them. */
static void no_cycle(int rounds) {
  for (int k = 0; k < rounds; k++) {
    enum { N = 8 };
    node n[N];
    int go = 0;
    memset(n, 0, sizeof n);
    for (int i = 0; i < N; i++)
      n[i].go = &go;
    static const char *const label[N] = {"a", "b", "c", "d",
                                         "e", "f", "g", "h"};
    for (int i = 0; i < 5; i++) {
      n[i].join = i ? n[i - 1].self : NULL;
      n[i].self = spawn_named(label[i], node_fn, &n[i], NULL, 0);
    }
    n[5].after = n[1].self;
    n[6].after = n[3].self;
    n[7].after = n[0].self;
    for (int i = 5; i < N; i++)
      n[i].self = spawn_named(label[i], node_fn, &n[i], NULL, 0);
    tt_store(&go, 1);
    for (int i = 5; i < N; i++)
      EXPECT_OK(weft_task_join(n[i].self));
    EXPECT_OK(weft_task_join(n[4].self));
  }
}

int main(void) {
  rt = tt_open(NULL);
  int rounds = tt_quick() ? 5 : 20;
  for (int k = 0; k < rounds; k++) {
    ring(2);
    ring(3);
    plain_thread_cycle();
    dataflow_cycle();
  }
  no_cycle(rounds * 5);
  tt_close(rt);
  /* One worker: the tasks of a ring run one after another. */
  rt = tt_open_workers(1);
  ring(2);
  ring(3);
  plain_thread_cycle();
  dataflow_cycle();
  no_cycle(5);
  tt_close(rt);
  printf("ok\n");
  return 0;
}
