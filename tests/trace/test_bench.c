/* Every `weft bench` scenario under WEFT_TRACE, on the host backend at
 * quick sizes: each writes a trace with operations that `weft trace check`
 * passes, or says on stderr why its trace holds none (a reason of its own,
 * not the runner's fallback); the data-flow scenarios' weft runs lie in a
 * range named for their size, which `weft trace explain --range` reads.
 * Arguments: the weft binary. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clip.h"
#include "compat.h"
#include "expect.h"
#include "model.h"

static const char *weft;
static char dir[] = "/tmp/weft_trace_bench_XXXXXX";

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  static char buf[1 << 16];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

/* Runs cmd through the shell; its exit code. */
static int run(const char *cmd) {
  int status = system(cmd);
  EXPECT(status != -1 && WIFEXITED(status));
  return WEXITSTATUS(status);
}

/* The data-flow scenario's range for its one quick size, "NAME n=N b=B",
 * and `weft trace explain --range` over it. */
static void sized_range(const char *name, const trace_model *m,
                        const char *trace) {
  char names[1024], want[64], cmd[4096];
  trace_range_names(m, names, sizeof names);
  snprintf(want, sizeof want, "'%.40s n=", name); /* listed as 'a', 'b' */
  const char *at = strstr(names, want);
  EXPECT_MSG(at && strstr(at, " b="), "%s: no range %s...' among: %s", name,
             want, names);
  char range[64];
  size_t len = strcspn(++at, "'");
  EXPECT(len < sizeof range);
  memcpy(range, at, len);
  range[len] = '\0';
  snprintf(cmd, sizeof cmd,
           "'%s' trace explain '%s' --range '%s' | grep -q 'inside the "
           "ranges'",
           weft, trace, range);
  EXPECT_MSG(run(cmd) == 0, "%s: weft trace explain --range '%s' failed", name,
             range);
}

static void scenario(const char *name) {
  char cmd[4096], trace[1024], err[1024];
  snprintf(trace, sizeof trace, "%s/%s.json", dir, name);
  snprintf(err, sizeof err, "%s/%s.err", dir, name);
  snprintf(cmd, sizeof cmd,
           "WEFT_TRACE='%s' '%s' bench --quick --backend host %s >/dev/null "
           "2>'%s'",
           trace, weft, name, err);
  EXPECT_MSG(run(cmd) == 0, "weft bench %s failed: %s", name, slurp(err));
  const char *text = slurp(err);
  EXPECT(text != NULL);
  trace_model m;
  trace_error e;
  if (trace_model_load_file(&m, trace, &e) != 0) {
    EXPECT_MSG(strstr(text, "no trace written: ") &&
                   !strstr(text, "bench_untraced"),
               "%s: no trace (%s) and no reason: %s", name, e.message, text);
  } else if (m.nops == 0) {
    EXPECT_MSG(strstr(text, "holds no operations: ") &&
                   !strstr(text, "bench_untraced"),
               "%s: a trace without operations and no reason: %s", name, text);
  } else {
    long n = trace_compat_problems(stderr, &m, 5);
    EXPECT_MSG(n == 0, "%s: weft trace check finds %ld problems", name, n);
    if (strcmp(name, "dataflow") == 0 || strcmp(name, "dataflow-fp64") == 0)
      sized_range(name, &m, trace);
  }
  printf("%-12s %8zu operations\n", name, m.nops);
  trace_model_free(&m);
  unlink(trace);
  unlink(err);
}

int main(int argc, char **argv) {
  EXPECT(argc == 2);
  weft = argv[1];
  EXPECT(mkdtemp(dir) != NULL);
  char cmd[4096], list[1024];
  snprintf(list, sizeof list, "%s/list.txt", dir);
  snprintf(cmd, sizeof cmd, "'%s' bench --list >'%s'", weft, list);
  EXPECT_EQ_INT(run(cmd), 0);
  FILE *f = fopen(list, "r");
  EXPECT(f != NULL);
  char line[1024];
  int scenarios = 0;
  while (fgets(line, sizeof line, f)) {
    char name[64];
    if (sscanf(line, " %63s", name) != 1)
      continue;
    scenario(name);
    scenarios++;
  }
  fclose(f);
  EXPECT_MSG(scenarios > 10, "only %d scenarios listed", scenarios);
  unlink(list);
  rmdir(dir);
  printf("bench traces: ok (%d scenarios)\n", scenarios);
  return 0;
}
