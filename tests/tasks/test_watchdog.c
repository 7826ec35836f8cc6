/* The watchdog (weft_runtime_opts.watchdog_ms, WEFT_WATCHDOG): off by
 * default; out-of-range values refused naming the option or variable;
 * on, it names on stderr each task that has made no progress for longer
 * than the limit, with what it waits for (a weft_wait_until test, one
 * named by weft_wait_until_named, a join), once per stall: a task that
 * stays stalled is named once, one that moves on to a new wait is named
 * again, and one that keeps running (yielding) is never named. Then
 * everything is released and the runtime shuts down cleanly.
 *
 * stderr is captured into a file while the watchdog runs; the test waits
 * for the lines it expects (generous timeouts only). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "task_common.h"
#include "weft_internal.h"

enum { LIMIT_MS = 300, WAIT_MS = 30000 };

static weft_runtime *rt;

/* ---- stderr into a file ---- */

static char cap_path[64];
static int saved_stderr = -1;

static void uncapture(void) {
  if (saved_stderr < 0)
    return;
  fflush(stderr);
  dup2(saved_stderr, 2);
  close(saved_stderr);
  saved_stderr = -1;
  /* What the runtime (and a failed expectation) wrote, for the log. */
  FILE *f = fopen(cap_path, "r");
  if (f) {
    char buf[512];
    while (fgets(buf, sizeof buf, f))
      fputs(buf, stderr);
    fclose(f);
  }
  unlink(cap_path);
}

static void capture(void) {
  snprintf(cap_path, sizeof cap_path, "/tmp/weft-watchdog-XXXXXX");
  int fd = mkstemp(cap_path);
  EXPECT(fd >= 0);
  fflush(stderr);
  saved_stderr = dup(2);
  EXPECT(saved_stderr >= 0);
  EXPECT(dup2(fd, 2) == 2);
  close(fd);
  atexit(uncapture); /* a failure shows what was written too */
}

/* Lines of the captured stderr holding both a and b. */
static int lines_with(const char *a, const char *b) {
  FILE *f = fopen(cap_path, "r");
  EXPECT(f != NULL);
  char buf[1024];
  int n = 0;
  while (fgets(buf, sizeof buf, f))
    n += strstr(buf, a) && strstr(buf, b);
  fclose(f);
  return n;
}

static void wait_lines(const char *a, const char *b, int n) {
  int64_t end = tt_now_ns() + WAIT_MS * 1000000LL;
  while (lines_with(a, b) < n) {
    EXPECT_MSG(tt_now_ns() < end, "no watchdog line with \"%s\" and \"%s\"", a,
               b);
    tt_sleep_ms(10);
  }
}

/* ---- the tasks ---- */

static int gate1, gate2, gate3, spun;

static int is_open(void *arg) {
  return tt_load((const int *)arg) ? 0 : WEFT_EAGAIN;
}

/* Two stalls one after the other. */
static void stuck(void *arg) {
  (void)arg;
  EXPECT_OK(weft_wait_until(is_open, &gate1));
  EXPECT_OK(weft_wait_until(is_open, &gate2));
}

static void named(void *arg) {
  (void)arg;
  EXPECT_OK(weft_wait_until_named(is_open, &gate3, "an imaginary request"));
}

static void joiner(void *arg) { EXPECT_OK(weft_task_join(arg)); }

/* Runs all along (sleeping a little, to leave the CPUs to the rest):
 * progress, never named. */
static void spinner(void *arg) {
  (void)arg;
  while (!tt_load(&gate3)) {
    tt_add(&spun, 1);
    tt_sleep_ms(1);
    weft_yield();
  }
}

static weft_task *spawn(const char *name, weft_task_fn fn, void *arg) {
  weft_task_opts o;
  weft_task_opts_init(&o);
  o.name = name;
  weft_task *t = NULL;
  EXPECT_OK(weft_task_spawn(rt, &t, fn, arg, &o));
  return t;
}

static void refused_env(const char *value) {
  weft_runtime *r = NULL;
  EXPECT(setenv("WEFT_WATCHDOG", value, 1) == 0);
  EXPECT_ERR(weft_init(&r, NULL), WEFT_EINVAL);
  EXPECT_MSG(strstr(weft_last_error_message(), "WEFT_WATCHDOG") != NULL,
             "'%s': %s", value, weft_last_error_message());
}

static void settings(void) {
  /* Off by default. */
  const char *env = getenv("WEFT_WATCHDOG");
  if (!env || !*env) {
    rt = tt_open(NULL);
    EXPECT(rt->watchdog == NULL && !rt->h.watchdog);
    EXPECT_EQ_INT((long long)weft__watchdog_reports(rt), 0);
    tt_close(rt);
  }
  static const char *const bad[] = {"-1",    "abc", "1e3",   "0x10",  " 1",
                                    "1.2.3", ".",   "86401", "0.0001"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    refused_env(bad[i]);
  EXPECT(setenv("WEFT_WATCHDOG", "0.25", 1) == 0);
  rt = tt_open(NULL);
  EXPECT(rt->watchdog != NULL && rt->h.watchdog);
  EXPECT_EQ_INT(rt->opts.watchdog_ms, 250);
  tt_close(rt);
  /* The option wins: 0 is off whatever the environment says. */
  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  o.watchdog_ms = 0;
  rt = tt_open(&o);
  EXPECT(rt->watchdog == NULL);
  tt_close(rt);
  EXPECT(env ? setenv("WEFT_WATCHDOG", env, 1) == 0
             : unsetenv("WEFT_WATCHDOG") == 0);
  weft_runtime *r = NULL;
  static const int bad_ms[] = {-2, 86400001};
  for (int i = 0; i < 2; i++) {
    o.watchdog_ms = bad_ms[i];
    EXPECT_ERR(weft_init(&r, &o), WEFT_EINVAL);
    EXPECT(strstr(weft_last_error_message(), "watchdog_ms") != NULL);
  }
}

int main(void) {
  settings();

  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  o.watchdog_ms = LIMIT_MS;
  rt = tt_open(&o);
  capture();
  weft_task *s = spawn("stuck", stuck, NULL);
  weft_task *n = spawn("named", named, NULL);
  weft_task *j = spawn("joiner", joiner, s);
  weft_task *p = spawn("spinner", spinner, NULL);

  const char *test_words = "weft_wait_until for a test";
  wait_lines("task 'stuck' (id", test_words, 1);
  wait_lines("task 'named' (id", "weft_wait_until for an imaginary request", 1);
  wait_lines("task 'joiner' (id", "weft_task_join for task 'stuck' (id", 1);
  /* Stalled on: named once, however many looks the watchdog takes (a
   * quarter of the limit apart; this is a dozen). */
  tt_sleep_ms(4 * LIMIT_MS);
  EXPECT_EQ_INT(lines_with("task 'stuck'", test_words), 1);
  EXPECT_EQ_INT(lines_with("task 'named'", "imaginary"), 1);
  EXPECT_EQ_INT(lines_with("task 'joiner'", "weft_task_join"), 1);
  EXPECT(tt_load(&spun) > 0);

  /* A new stall is a new report. */
  tt_store(&gate1, 1);
  wait_lines("task 'stuck' (id", test_words, 2);
  EXPECT(weft__watchdog_reports(rt) >= 4);

  tt_store(&gate2, 1);
  tt_store(&gate3, 1);
  EXPECT_OK(weft_task_join(j));
  EXPECT_OK(weft_task_join(n));
  EXPECT_OK(weft_task_join(p));
  EXPECT_EQ_INT(lines_with("task 'spinner'", ""), 0);
  tt_close(rt);
  uncapture();
  printf("ok\n");
  return 0;
}
