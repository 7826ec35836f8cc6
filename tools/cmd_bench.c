#define _POSIX_C_SOURCE 200809L /* unsetenv */
/* weft bench: runs the benchmark scenarios of bench/ and prints their
 * table. This file only reads the options and picks the backend; the
 * runner, the scenarios, the JSON writer and the charts are in bench/. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"
#include "cli.h"

static void list_scenarios(void) {
  size_t n;
  const bench_scenario *const *all = bench_scenarios(&n);
  for (size_t i = 0; i < n; i++)
    printf("  %-13s %s\n", all[i]->name, all[i]->description);
}

typedef struct bench_args {
  int list, quick;
  long repeat;
  const char *json, *plot;
  const char **names;
  int nnames;
} bench_args;

/* Returns CLI_OK, CLI_USAGE, or -1 after printing the help. */
static int parse_args(cli_global *g, int argc, char **argv, bench_args *a) {
  for (int i = 1; i < argc; i++) {
    const char *v;
    int m;
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      cli_print_command_help("bench");
      return -1;
    }
    if (!strcmp(argv[i], "--list")) {
      a->list = 1;
    } else if (!strcmp(argv[i], "--quick")) {
      a->quick = 1;
    } else if ((m = cli_common_flag(g, argc, argv, &i)) != 0) {
      if (m < 0)
        return CLI_USAGE;
    } else if ((m = cli_flag_value(argc, argv, &i, "--json", &v)) != 0) {
      if (m < 0)
        return CLI_USAGE;
      a->json = v;
    } else if ((m = cli_flag_value(argc, argv, &i, "--plot", &v)) != 0) {
      if (m < 0)
        return CLI_USAGE;
      a->plot = v;
    } else if ((m = cli_flag_value(argc, argv, &i, "--repeat", &v)) != 0) {
      if (m < 0 ||
          cli_parse_long("--repeat", v, 1, BENCH_MAX_REPEAT, &a->repeat))
        return CLI_USAGE;
    } else if (argv[i][0] == '-') {
      return cli_bad_arg("bench", argv[i]);
    } else {
      if (!bench_find(argv[i]))
        return cli_usage_error("no scenario '%s'; 'weft bench --list' "
                               "lists them",
                               argv[i]);
      a->names[a->nnames++] = argv[i];
    }
  }
  return CLI_OK;
}

/* Where the results go must take them: found before the run, not after
 * minutes of it. A file made to find out is removed again. */
static int outputs_ok(const bench_args *a) {
  if (a->json && a->plot && !strcmp(a->json, a->plot))
    return cli_usage_error("--json and --plot name the same path, '%s'",
                           a->json);
  if (a->json) {
    int existed = access(a->json, F_OK) == 0;
    FILE *f = fopen(a->json, "a");
    if (!f)
      return cli_fail("bench", "cannot write %s: %s", a->json, strerror(errno));
    fclose(f);
    if (!existed)
      unlink(a->json);
  }
  struct stat st;
  if (a->plot && stat(a->plot, &st) == 0 &&
      (!S_ISDIR(st.st_mode) || access(a->plot, W_OK) != 0))
    return cli_fail("bench", "cannot draw charts into %s: %s", a->plot,
                    S_ISDIR(st.st_mode) ? strerror(errno) : "not a directory");
  return CLI_OK;
}

/* A chart folder that cannot be made is refused before the runs, not
 * after minutes of them; one this call made is removed if it fails to
 * start (*made says so). */
static int plot_dir(const bench_args *a, int *made) {
  struct stat st;
  *made = 0;
  if (!a->plot || stat(a->plot, &st) == 0)
    return CLI_OK;
  if (mkdir(a->plot, 0777) != 0)
    return cli_fail("bench", "cannot make %s: %s", a->plot, strerror(errno));
  *made = 1;
  return CLI_OK;
}

static int run_made(cli_global *g, const bench_args *a);

static int run(cli_global *g, const bench_args *a) {
  int ok = outputs_ok(a), made = 0;
  if (ok == CLI_OK)
    ok = plot_dir(a, &made);
  if (ok != CLI_OK)
    return ok;
  int rc = run_made(g, a);
  if (rc != CLI_OK && made)
    rmdir(a->plot); /* only if still empty: charts written stay */
  return rc;
}

static int run_made(cli_global *g, const bench_args *a) {
  /* WEFT_TRACE is the bench's to give, one scenario runtime at a time
   * (bench.h, bench_trace_claim): taken out of the environment so that
   * this probe, and runtimes a scenario opens itself, do not trace and
   * overwrite the file. */
  static char trace[4096];
  const char *env = getenv("WEFT_TRACE");
  if (env && *env) {
    if (strlen(env) >= sizeof trace)
      return cli_fail("bench", "WEFT_TRACE is longer than %zu bytes",
                      sizeof trace - 1);
    strcpy(trace, env);
  }
  if (env && unsetenv("WEFT_TRACE") != 0)
    return cli_fail("bench", "cannot unset WEFT_TRACE");
  /* Resolve auto once, here, so that every scenario's runtime opens the
   * same backend and the header can say why CUDA was passed over. */
  weft_runtime *rt;
  char why[256];
  int rc = cli_open_runtime(g, "bench", &rt, why, sizeof why);
  if (rc != CLI_OK)
    return rc;
  weft_device_info info;
  int e = weft_device_get_info(rt, 0, &info);
  weft_backend_kind kind = weft_runtime_backend(rt);
  int s = weft_shutdown(rt);
  if (e || s) {
    const char *msg = weft_last_error_message();
    return cli_fail("bench", "%s: %s",
                    e ? "weft_device_get_info" : "weft_shutdown",
                    *msg ? msg : weft_strerror(e ? e : s));
  }
  if (why[0])
    printf("(auto: CUDA not used: %s)\n", why);

  bench_opts o = {
      .backend = kind,
      .device = info.name,
      .quick = a->quick,
      .repeat = (int)a->repeat,
      .json_path = a->json,
      .plot_dir = a->plot,
      .names = a->names,
      .nnames = a->nnames,
      .out = stdout,
      .trace_path = trace[0] ? trace : NULL,
  };
  return bench_run(&o) == 0 ? CLI_OK : CLI_FAIL;
}

int cmd_bench(cli_global *g, int argc, char **argv) {
  const char **names = calloc((size_t)argc + 1, sizeof *names);
  if (!names)
    return cli_fail("bench", "out of memory");
  bench_args a = {.names = names};
  int rc = parse_args(g, argc, argv, &a);
  if (rc == CLI_OK && a.list)
    list_scenarios();
  if (rc == CLI_OK && !a.list)
    rc = run(g, &a);
  free(names);
  return rc < 0 ? CLI_OK : rc;
}
