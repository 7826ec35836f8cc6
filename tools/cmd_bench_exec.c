#define _GNU_SOURCE /* program_invocation_name */
/* weft bench, as the weft binary runs it: by handing the whole command line
 * to weft-bench, installed beside it. The benchmarks call cuBLAS and
 * cuSOLVER themselves and so link them, and a binary that links them
 * spends half a second and 270 MB loading cuBLASLt before main; keeping
 * them out of weft lets `weft trace`, `weft info` and `weft demo` start at
 * once (docs/decisions/libraries.md, "The math libraries load at first
 * use"). weft-bench is the same tool with the benchmarks linked in. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

enum { MAX_ARGS = 256 };

int cmd_bench(cli_global *g, int argc, char **argv) {
  char self[PATH_MAX], path[PATH_MAX + 16];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0)
    n = (ssize_t)snprintf(self, sizeof self, "%s", program_invocation_name);
  self[n < (ssize_t)sizeof self ? n : (ssize_t)sizeof self - 1] = '\0';
  char *slash = strrchr(self, '/');
  if (slash)
    snprintf(path, sizeof path, "%.*s/weft-bench", (int)(slash - self), self);
  else
    snprintf(path, sizeof path, "weft-bench");
  /* weft-bench [--backend B] bench ARGS...: the global option given as a
   * flag travels; one from WEFT_BACKEND travels in the environment. */
  char *args[MAX_ARGS + 4];
  int k = 0;
  args[k++] = path;
  if (g->backend_from_flag) {
    args[k++] = "--backend";
    args[k++] = (char *)weft_backend_name(g->backend);
  }
  if (argc > MAX_ARGS)
    return cli_usage_error("too many arguments for 'bench' (at most %d)",
                           MAX_ARGS);
  for (int i = 0; i < argc; i++)
    args[k++] = argv[i];
  args[k] = NULL;
  fflush(NULL);
  execv(path, args);
  return cli_fail("bench",
                  "cannot run %s: %s (weft-bench is built and installed "
                  "beside weft)",
                  path, strerror(errno));
}
