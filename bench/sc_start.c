/* start: what linking weft costs a program's start.
 *
 * The probe (start_probe.c), an empty main, is run to its end over and
 * over with posix_spawn, built three ways: linked with weft (libweft.so),
 * with what weft itself links alone (on CUDA: the CUDA runtime and CUPTI;
 * on a host-only build: nothing), and, on CUDA, with cuBLAS as well, which
 * weft linked before it opened the math libraries at first use
 * (docs/decisions/libraries.md). The probes are built beside weft-bench;
 * elsewhere (an installed weft-bench) the rows are skipped.
 * Baseline: the probe linked with what weft links. Target: weft adds
 * <= 10 ms a start. */
#include <errno.h>
#include <limits.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

extern char **environ;

enum { NPROBES = 3 };

static const char *const probe_names[NPROBES] = {
    "weft-start-base", "weft-start-weft", "weft-start-cublas"};

/* probe's path beside this program into path: 0, or -1 when it is not
 * there. */
static int probe_path(const char *probe, char *path, size_t len) {
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0)
    return -1;
  self[n] = '\0';
  char *slash = strrchr(self, '/');
  if (!slash)
    return -1;
  *slash = '\0';
  if (snprintf(path, len, "%s/%s", self, probe) >= (int)len)
    return -1;
  return access(path, X_OK) == 0 ? 0 : -1;
}

/* Runs path k times, one after another; the mean ns a run into *ns, or
 * bench_fail. */
static int starts(bench_ctx *c, const char *path, int k, double *ns) {
  char *argv[] = {(char *)path, NULL};
  uint64_t t0 = bench_now_ns();
  for (int i = 0; i < k; i++) {
    pid_t pid;
    int rc = posix_spawn(&pid, path, NULL, NULL, argv, environ);
    if (rc)
      return bench_fail(c, "posix_spawn %s: %s", path, strerror(rc));
    int st;
    while (waitpid(pid, &st, 0) < 0)
      if (errno != EINTR)
        return bench_fail(c, "waitpid %s: %s", path, strerror(errno));
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
      return bench_fail(c, "%s did not exit 0 (status 0x%x)", path, st);
  }
  *ns = (double)(bench_now_ns() - t0) / k;
  return 0;
}

static int run(bench_ctx *c) {
  static const char *const variants[NPROBES] = {
      "a program linked with what weft links",
      "the same linked with weft",
      "the same linked with cuBLAS too",
  };
  char path[NPROBES][PATH_MAX + 32];
  int have[NPROBES];
  for (int p = 0; p < NPROBES; p++)
    have[p] = probe_path(probe_names[p], path[p], sizeof path[p]) == 0;
  if (!have[0] || !have[1]) {
    int rc = 0;
    for (int p = 0; p < 2 && rc == 0; p++)
      rc = bench_skip(c, variants[p], "ms",
                      "the start probes are not beside weft-bench (a build "
                      "tree has them)");
    return rc;
  }
  bench_samples s[NPROBES] = {0};
  /* Starts a sample: the cuBLAS probe takes half a second each. */
  int k = (int)bench_size(c, 10, 3), kb = (int)bench_size(c, 2, 1);
  /* The probes take turns within each repeat, so drift favours none. */
  for (int r = 0; r <= bench_repeat(c); r++)
    for (int p = 0; p < NPROBES; p++) {
      double ns = 0;
      if (!have[p])
        continue;
      if (starts(c, path[p], p == 2 ? kb : k, &ns))
        return BENCH_FAIL;
      if (r > 0)
        bench_samples_add(&s[p], ns / 1e6);
    }
  double added = bench_stats_of(&s[1]).median - bench_stats_of(&s[0]).median;
  int rc = bench_report(c, variants[0], "ms", &s[0], BENCH_BASELINE,
                        "%s; posix_spawn to exit, %d starts a sample (%d "
                        "with cuBLAS), the probes taking turns",
                        have[2] ? "the CUDA runtime and CUPTI"
                                : "libc alone (a host-only build)",
                        k, kb);
  if (rc == 0)
    rc = bench_report(c, variants[1], "ms", &s[1], 0,
                      "weft adds %+.2f ms a start; target <= 10 ms (%s)", added,
                      added <= 10 ? "met" : "MISSED");
  if (rc == 0 && have[2])
    rc = bench_report(c, variants[2], "ms", &s[2], 0,
                      "what a program linking weft paid before weft opened "
                      "the math libraries at first use");
  return rc;
}

const bench_scenario bench_sc_start = {
    "start", "what linking weft costs a program's start", run};
