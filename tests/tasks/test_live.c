/* 10 000 tasks live at once (1000 under TSan, which keeps megabytes of
 * state for every live fiber and runs out of address space before 10 000).
 *
 * Every task counts itself in, yields a few times, then yields until all
 * have counted in: none can end before the last one started, so all are
 * live (each with its own stack) at the same time. Spawned once from a
 * task (onto a worker's own queue) and once from the main thread, on one
 * worker and on several.
 *
 * Starvation (tasks never started while the running ones yield) fails the
 * test instead of hanging it: once all are spawned, a task that yields
 * max_yields times in a row without anyone arriving reports it. On one
 * worker that count depends on the scheduling order alone; on several,
 * the bound is large enough that only a worker running nothing else for
 * seconds could reach it. */
#include <stdio.h>
#include <stdlib.h>

#include "task_common.h"
#include "weft_internal.h"

enum { N = TT_TSAN ? 1000 : 10000 };

static weft_runtime *rt;
static weft_task **handles;
static int arrived, finished, live, max_live, starved, all_spawned;
static long max_yields;

static void member(void *arg) {
  int l = tt_add(&live, 1) + 1;
  int m = tt_load(&max_live);
  while (l > m &&
         !__atomic_compare_exchange_n(&max_live, &m, l, 0, __ATOMIC_ACQ_REL,
                                      __ATOMIC_ACQUIRE)) {
  }
  tt_add(&arrived, 1);
  for (int k = 0; k < 3; k++)
    weft_yield();
  long idle = 0;
  int a, seen = -1;
  while ((a = tt_load(&arrived)) < N && !tt_load(&starved)) {
    if (a != seen) {
      seen = a;
      idle = 0;
    } else if (tt_load(&all_spawned) && ++idle > max_yields) {
      tt_store(&starved, 1);
      break;
    }
    weft_yield();
  }
  *(int *)arg = 1;
  tt_add(&live, -1);
  tt_add(&finished, 1);
}

static int *marks;

static void spawn_all(void) {
  for (int i = 0; i < N; i++)
    EXPECT_OK(weft_task_spawn(rt, &handles[i], member, &marks[i], NULL));
  tt_store(&all_spawned, 1);
}

static void spawner(void *arg) { spawn_all(); }

static void run(int from_task) {
  arrived = finished = live = max_live = starved = all_spawned = 0;
  for (int i = 0; i < N; i++)
    marks[i] = 0;
  if (from_task) {
    weft_task *t;
    EXPECT_OK(weft_task_spawn(rt, &t, spawner, NULL, NULL));
    EXPECT_OK(weft_task_join(t));
  } else {
    spawn_all();
  }
  for (int i = 0; i < N; i++)
    EXPECT_OK(weft_task_join(handles[i]));
  EXPECT_MSG(!starved,
             "spawned from %s: a task yielded %ld times in a row while others "
             "waited to start",
             from_task ? "a task" : "the main thread", max_yields);
  EXPECT_EQ_INT(finished, N);
  EXPECT_EQ_INT(live, 0);
  EXPECT_EQ_INT(max_live, N);
  for (int i = 0; i < N; i++)
    EXPECT_MSG(marks[i] == 1, "task %d did not run to its end", i);
  printf("%d live tasks spawned from %s, %d worker(s): ok\n", N,
         from_task ? "a task" : "the main thread", rt->sched.nworkers);
  fflush(stdout);
}

int main(void) {
  handles = calloc(N, sizeof *handles);
  marks = calloc(N, sizeof *marks);
  EXPECT(handles && marks);
  for (int workers = 1; workers <= 2; workers++) {
    rt = tt_open_workers(workers);
    max_yields = workers == 1 ? 1000000 : 50000000;
    run(1);
    run(0);
    tt_close(rt);
  }
  free(handles);
  free(marks);
  puts("ok");
  return 0;
}
