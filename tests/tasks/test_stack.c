/* Fiber stacks: a task may use nearly all of the stack size it was given;
 * tasks suspended side by side keep their own stacks intact; and a task
 * that overflows its stack dies by SIGSEGV with a message naming the
 * overflow, and by SIGSEGV still when its stderr is a pipe nobody reads
 * (checked in a child process; skipped under the sanitizers, which install
 * their own SIGSEGV handlers). And a task with declared data
 * that finds no memory for a stack ends only after the tasks it follows
 * have (the tasks after it follow it alone): with the address space capped
 * (RLIMIT_AS, in a child process, on the host backend, not under the
 * sanitizers, whose shadow memory the cap would break), B waits for A,
 * runs once A's stack is free, and C, after B, runs after both. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "task_common.h"
#include "weft_internal.h"

/* Fills `bytes` of its stack with a pattern, yields `yields` times, then
 * checks the pattern: another task on the same stack memory would break
 * it. */
typedef struct use {
  size_t bytes;
  int yields;
  int id;
  long long sum;
} use;

static void __attribute__((noinline)) use_stack(use *u) {
  size_t n = u->bytes / sizeof(int);
  volatile int buf[n]; /* VLA: exactly the size asked for */
  for (size_t i = 0; i < n; i++)
    buf[i] = (int)(i * 2654435761u) ^ u->id;
  for (int k = 0; k < u->yields; k++)
    weft_yield();
  long long s = 0;
  for (size_t i = 0; i < n; i++) {
    EXPECT_MSG(buf[i] == ((int)(i * 2654435761u) ^ u->id),
               "task %d: its stack word %zu changed while it was suspended",
               u->id, i);
    s += buf[i];
  }
  u->sum = s;
}

static void stack_task(void *arg) { use_stack(arg); }

static long long expected_sum(size_t bytes, int id) {
  long long s = 0;
  for (size_t i = 0; i < bytes / sizeof(int); i++)
    s += (int)(i * 2654435761u) ^ id;
  return s;
}

static void big_stacks(size_t stack_size, size_t use_bytes, int tasks) {
  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  o.stack_size = stack_size;
  o.workers = 2;
  weft_runtime *rt = tt_open(&o);
  static use us[64];
  weft_task *t[64];
  EXPECT(tasks <= 64);
  for (int i = 0; i < tasks; i++) {
    us[i] = (use){.bytes = use_bytes, .yields = 5, .id = i + 1};
    EXPECT_OK(weft_task_spawn(rt, &t[i], stack_task, &us[i], NULL));
  }
  for (int i = 0; i < tasks; i++) {
    EXPECT_OK(weft_task_join(t[i]));
    EXPECT_EQ_INT(us[i].sum, expected_sum(use_bytes, i + 1));
  }
  tt_close(rt);
}

/* ---- overflow, in a child process ---- */

static int __attribute__((noinline)) recurse(int depth) {
  volatile char pad[512];
  pad[0] = (char)depth;
  pad[511] = (char)(depth >> 8);
  if (depth == 0)
    return pad[0];
  return recurse(depth - 1) + pad[0] + pad[511];
}

static void overflow_task(void *arg) {
  int r = recurse(1 << 20); /* 512 MiB of frames: far past 64 KiB */
  *(int *)arg = r;
}

/* One frame larger than the whole stack: without stack clash protection
 * its first write lands below the guard page, in the neighbouring stack. */
static void __attribute__((noinline)) jump(volatile int *out) {
  volatile char big[72 * 1024];
  big[0] = 1;
  big[sizeof big - 1] = 2;
  *out = big[0] + big[sizeof big - 1];
}

static void jump_task(void *arg) { jump(arg); }

static weft_task_fn overflowing = overflow_task;

static void overflow_child(size_t guards) {
  weft__stack_guards_max = guards;
  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  o.stack_size = 64 * 1024;
  o.workers = 1;
  weft_runtime *rt = NULL;
  int rc = weft_init(&rt, &o);
  if (rc == WEFT_ENODEV)
    _exit(77);
  if (rc)
    _exit(3);
  static int r;
  weft_task *t;
  if (weft_task_spawn(rt, &t, overflowing, &r, NULL))
    _exit(4);
  weft_task_join(t);
  _exit(5); /* survived the overflow */
}

/* In the forked child: no core file, stderr the pipe's write end. */
static void child_stderr_to(int fds[2]) {
  struct rlimit no_core = {0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  close(fds[0]);
  dup2(fds[1], 2);
  close(fds[1]);
}

/* Runs fn in a forked child whose pool guards at most `guards` stacks (0:
 * none, the path past the kernel's map budget) and checks that it died of
 * SIGSEGV after naming the overflow. */
static void overflow(weft_task_fn fn, size_t guards) {
  overflowing = fn;
  int fds[2];
  EXPECT(pipe(fds) == 0);
  fflush(NULL);
  pid_t pid = fork();
  EXPECT(pid >= 0);
  if (pid == 0) {
    child_stderr_to(fds);
    overflow_child(guards);
  }
  close(fds[1]);
  /* Reads to the end, keeping the first 4 KiB: a reader that stopped
   * early would close the pipe on a child still writing its backtrace. */
  char out[4096], rest[4096];
  size_t len = 0;
  ssize_t r;
  while ((r = read(fds[0], len < sizeof out - 1 ? out + len : rest,
                   len < sizeof out - 1 ? sizeof out - 1 - len : sizeof rest)) >
         0)
    if (len < sizeof out - 1)
      len += (size_t)r;
  out[len] = '\0';
  close(fds[0]);
  int status = 0;
  EXPECT(waitpid(pid, &status, 0) == pid);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
    return; /* no device for this backend: the rest of the test skips */
  EXPECT_MSG(
      WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV,
      "the overflowing child did not die by SIGSEGV (%s %d); its stderr: %s",
      WIFSIGNALED(status) ? "signal" : "exit",
      WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status), out);
  EXPECT_MSG(strstr(out, "overflowed") != NULL,
             "no overflow message on stderr: '%s'", out);
}

/* The same with the child's stderr a pipe whose reader is gone: the
 * report's writes fail, and the child still dies by SIGSEGV (not by
 * SIGPIPE, which would hide the cause from whoever waits for it). */
static void overflow_unread(void) {
  overflowing = overflow_task;
  fflush(NULL);
  pid_t pid = fork();
  EXPECT(pid >= 0);
  if (pid == 0) {
    int fds[2];
    if (pipe(fds) != 0)
      _exit(6);
    child_stderr_to(fds);
    overflow_child(SIZE_MAX);
  }
  int status = 0;
  EXPECT(waitpid(pid, &status, 0) == pid);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
    return;
  EXPECT_MSG(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV,
             "with stderr unread, the overflowing child did not die by "
             "SIGSEGV (%s %d)",
             WIFSIGNALED(status) ? "signal" : "exit",
             WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
}

/* ---- no stack: ordered all the same ---- */

static char *nostack_buf;
static int a_running, f_running, release_a, release_f;
static int a_done, b_ran, c_ran, c_saw_a, c_saw_b;

static void hold_a(void *arg) {
  (void)arg;
  tt_store(&a_running, 1);
  while (!tt_load(&release_a))
    weft_yield();
  tt_store(&a_done, 1);
}

static void hold_f(void *arg) {
  (void)arg;
  tt_store(&f_running, 1);
  while (!tt_load(&release_f))
    weft_yield();
}

static void after_b(void *arg) {
  (void)arg;
  tt_store(&b_ran, 1);
}

static void after_c(void *arg) {
  (void)arg;
  tt_store(&c_saw_a, tt_load(&a_done));
  tt_store(&c_saw_b, tt_load(&b_ran));
  tt_store(&c_ran, 1);
}

static size_t address_space(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  unsigned long pages = 0;
  EXPECT(f && fscanf(f, "%lu", &pages) == 1);
  fclose(f);
  return (size_t)pages * (size_t)sysconf(_SC_PAGESIZE);
}

static void nostack_child(void) {
  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  o.workers = 2;
  o.stack_size = 256u << 20; /* a mapping each: a cap stops the next */
  weft_runtime *rt = tt_open(&o);
  if (weft_runtime_backend(rt) != WEFT_BACKEND_HOST) {
    tt_close(rt);
    exit(0); /* the CUDA driver's own mappings need room the cap takes */
  }
  EXPECT_OK(weft_device_alloc(64, (void **)&nostack_buf));
  weft_access rw = {nostack_buf, 64, WEFT_RW};
  weft_task_opts to;
  weft_task_opts_init(&to);
  to.accesses = &rw;
  to.naccesses = 1;
  weft_task *a, *f, *b, *c;
  EXPECT_OK(weft_task_spawn(rt, &a, hold_a, NULL, &to));
  EXPECT_OK(weft_task_spawn(rt, &f, hold_f, NULL, NULL));
  tt_wait_flag(&a_running, 10000, "A running");
  tt_wait_flag(&f_running, 10000, "F running");
  struct rlimit old, cap;
  EXPECT(getrlimit(RLIMIT_AS, &old) == 0);
  cap = old;
  cap.rlim_cur = address_space() + (32u << 20);
  EXPECT(setrlimit(RLIMIT_AS, &cap) == 0);
  EXPECT_OK(weft_task_spawn(rt, &b, after_b, NULL, &to));
  EXPECT_OK(weft_task_spawn(rt, &c, after_c, NULL, &to));
  tt_sleep_ms(20);
  EXPECT(!tt_load(&b_ran) && !tt_load(&c_ran));
  tt_store(&release_f, 1); /* a stack is free, A still runs */
  EXPECT_OK(weft_task_join(f));
  tt_sleep_ms(20);
  EXPECT_MSG(!tt_load(&b_ran) && !tt_load(&c_ran),
             "B ran %d, C ran %d before A ended", tt_load(&b_ran),
             tt_load(&c_ran));
  tt_store(&release_a, 1);
  EXPECT_OK(weft_task_join(a));
  EXPECT_OK(weft_task_join(b));
  EXPECT_OK(weft_task_join(c));
  EXPECT(tt_load(&c_ran) && tt_load(&c_saw_a) && tt_load(&c_saw_b));
  EXPECT(setrlimit(RLIMIT_AS, &old) == 0);
  EXPECT_OK(weft_device_free(nostack_buf));
  EXPECT_OK(weft_sync());
  tt_close(rt);
  exit(0);
}

static void no_stack_ordered(void) {
  fflush(NULL);
  pid_t pid = fork();
  EXPECT(pid >= 0);
  if (pid == 0)
    nostack_child();
  int status = 0;
  EXPECT(waitpid(pid, &status, 0) == pid);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
    return;
  EXPECT_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
             "the no-stack child failed (status %d)", status);
}

int main(void) {
  /* Before any runtime: fork from a single-threaded process. */
  if (TT_SANITIZED)
    puts("overflow check skipped under the sanitizers");
  else {
    overflow(overflow_task, SIZE_MAX); /* deep recursion */
    overflow(jump_task, SIZE_MAX);     /* one frame past the guard page */
    overflow(overflow_task, 0);        /* the same without guard pages */
    overflow(jump_task, 0);
    overflow_unread();
    no_stack_ordered();
  }
  big_stacks(0, 32 * 1024, 16);            /* default 64 KiB */
  big_stacks(1024 * 1024, 768 * 1024, 16); /* 1 MiB */
  big_stacks(8 * 1024 * 1024, 6 * 1024 * 1024, 4);
  puts("ok");
  return 0;
}
