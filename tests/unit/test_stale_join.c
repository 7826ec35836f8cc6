/* A second join of a handle, racing the first: while the second waits for
 * the runtime's lock, the first joins the task and its object is reused
 * by a new task. The second must be refused (WEFT_EHANDLE) and leave the
 * new task to its owner; it used to join and free the new task, whose
 * owner then got WEFT_EHANDLE. The library is linked with
 * -Wl,--wrap=pthread_mutex_lock, so the racing thread's next lock waits,
 * where a preemption would, until the test says go. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>

#include "expect.h"
#include "weft.h"

int __real_pthread_mutex_lock(pthread_mutex_t *m);
int __wrap_pthread_mutex_lock(pthread_mutex_t *m);

static _Thread_local int hold_next;
static atomic_int held, go;

int __wrap_pthread_mutex_lock(pthread_mutex_t *m) {
  if (hold_next) {
    hold_next = 0;
    atomic_store(&held, 1);
    while (!atomic_load(&go))
      sched_yield();
  }
  return __real_pthread_mutex_lock(m);
}

static weft_task *h;
static int second_rc = -1;

static void quick(void *arg) { (void)arg; }

static int released(void *arg) {
  return atomic_load((atomic_int *)arg) ? 0 : WEFT_EAGAIN;
}

static void waits(void *arg) { EXPECT_OK(weft_wait_until(released, arg)); }

static void *second_joiner(void *arg) {
  (void)arg;
  hold_next = 1;
  second_rc = weft_task_join(h);
  return NULL;
}

static uintptr_t object_of(const weft_task *t) {
  return (uintptr_t)t & (((uintptr_t)1 << 48) - 1);
}

int main(void) {
  if (sizeof(void *) < 8)
    return 77; /* handles carry no generation */
  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  o.backend = WEFT_BACKEND_HOST;
  o.workers = 2;
  weft_runtime *rt;
  EXPECT_OK(weft_init(&rt, &o));
  /* Past the pool's quarantine, freed task objects are reused. */
  for (int i = 0; i < 100; i++) {
    weft_task *t;
    EXPECT_OK(weft_task_spawn(rt, &t, quick, NULL, NULL));
    EXPECT_OK(weft_task_join(t));
  }
  EXPECT_OK(weft_task_spawn(rt, &h, quick, NULL, NULL));
  pthread_t th;
  EXPECT(pthread_create(&th, NULL, second_joiner, NULL) == 0);
  while (!atomic_load(&held))
    sched_yield();
  EXPECT_OK(weft_task_join(h));
  /* New tasks until one lives in h's object. */
  weft_task *reused = NULL;
  atomic_int release[200];
  for (int i = 0; i < 200 && !reused; i++) {
    atomic_init(&release[i], 0);
    weft_task *t;
    EXPECT_OK(weft_task_spawn(rt, &t, waits, &release[i], NULL));
    if (object_of(t) == object_of(h)) {
      reused = t;
    } else {
      atomic_store(&release[i], 1);
      EXPECT_OK(weft_task_join(t));
    }
  }
  EXPECT_MSG(reused != NULL, "no new task reused the joined task's object");
  for (int i = 0; i < 200; i++)
    atomic_store(&release[i], 1);
  atomic_store(&go, 1);
  EXPECT(pthread_join(th, NULL) == 0);
  EXPECT_MSG(second_rc == WEFT_EHANDLE,
             "the second join of a joined handle returned %s, not EHANDLE",
             weft_err_name(second_rc));
  EXPECT_OK(weft_task_join(reused)); /* still its owner's to join */
  EXPECT_OK(weft_shutdown(rt));
  return 0;
}
