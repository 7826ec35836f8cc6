/* weft: the command-line tool. main() reads the global options, then hands
 * the rest of the arguments to one command from the table below; a new
 * command is one row there and one cmd_*.c file. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static int cmd_version(cli_global *g, int argc, char **argv);
static int cmd_help(cli_global *g, int argc, char **argv);

static const cli_command commands[] = {
    {"info", cmd_info, "[--backend B]",
     "show the backends built and each device's properties", NULL},
    {"demo", cmd_demo,
     "[--backend B] [--arrays N] [--log2n K] [--repeat R] [--depth D] "
     "[--trace FILE]",
     "normalise arrays on one stream and on many, timed with events",
     "  --arrays N    number of arrays, 1-64 (default 10)\n"
     "  --log2n K     each array holds 2^K floats, 8-28 (default 24 on "
     "CUDA,\n"
     "                20 on the host backend)\n"
     "  --repeat R    timed runs per variant, 1-1000; the median is shown\n"
     "                (default 5)\n"
     "  --depth D     arrays in flight in the pipelined variant (default 3)\n"
     "  --trace FILE  record a trace to FILE, then print how much overlapped\n"
     "                and draw the timeline to FILE.svg\n"},
    {"bench", cmd_bench,
     "[--backend B] [--list] [--quick] [--json FILE] [--plot DIR] "
     "[--repeat N] [SCENARIO...]",
     "run the benchmarks: weft against raw baselines, side by side",
     "  --list        list the scenarios and exit\n"
     "  --quick       small sizes and 3 repeats, for CI (seconds in all)\n"
     "  --json FILE   also write every row to FILE as JSON\n"
     "  --plot DIR    also draw SVG charts into DIR (made if missing):\n"
     "                saturation, tasks, copies, normalize, graph\n"
     "  --repeat N    timed repeats per variant, 1-1000; the median is "
     "shown\n"
     "                (default 7, or 3 with --quick)\n"
     "  SCENARIO      run only these (default: all, in --list order)\n"},
    {"trace", cmd_trace,
     "report FILE... [--json] [--top N] [--range NAME] | explain FILE "
     "[--json] [--top N] [--range NAME] | svg FILE -o OUT.svg [--width PX] | "
     "check FILE",
     "analyse a trace file (weft's or PyTorch's): overlap, idle, why",
     "  report FILE   GPU time breakdown, kernel/copy overlap, idle gaps per\n"
     "                stream, top kernels, copies, launch delays, tasks;\n"
     "                several FILEs or a directory of .json files (one per\n"
     "                MPI rank): each one's report, then every rank and the\n"
     "                total, with the tasks' wait time\n"
     "  --json        print the report as JSON (schema weft-trace-report/1)\n"
     "  --top N       rows of the kernel and task tables (default 10)\n"
     "  --range NAME  every figure for the time inside the ranges named\n"
     "                NAME only (weft_range_push, PyTorch's record_function)\n"
     "  explain FILE  why the GPU ran less than it could: lost time by\n"
     "                cause (declared order, implicit sync, one stream,\n"
     "                a stream taken over, the host issuing too slowly,\n"
     "                a full GPU, one hardware queue, copy engines, weft's\n"
     "                own cost), the longest stretches of each with their\n"
     "                tasks, and a verdict; --json gives schema\n"
     "                weft-trace-explain/1, --top N stretches per cause\n"
     "                (default 3), --range NAME inside those ranges\n"
     "  svg FILE      draw the trace as an SVG timeline\n"
     "  -o OUT.svg    where to write it ('-' for standard output)\n"
     "  --width PX    picture width in pixels, 400-20000 (default 1600)\n"
     "  check FILE    whether Perfetto and HTA read it as PyTorch's traces:\n"
     "                nested slices, plain CUDA names, launch arrows, rank;\n"
     "                exits 1 listing the first problems\n"
     "  FILE is Chrome Trace Event JSON ('-' reads standard input);\n"
     "  docs/TRACE.md explains every number\n"},
    {"version", cmd_version, "", "print weft's version and backends", NULL},
    {"help", cmd_help, "[COMMAND]", "show this text, or a command's", NULL},
};

enum { NCOMMANDS = sizeof commands / sizeof commands[0] };

static const cli_command *find_command(const char *name) {
  for (int i = 0; i < NCOMMANDS; i++)
    if (strcmp(commands[i].name, name) == 0)
      return &commands[i];
  return NULL;
}

static void print_usage(FILE *f) {
  fprintf(f, "usage: weft [--backend B] COMMAND [options]\n\ncommands:\n");
  for (int i = 0; i < NCOMMANDS; i++)
    fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].summary);
  fprintf(f, "\nglobal options:\n"
             "  --backend B   host, cuda or auto (default: $WEFT_BACKEND, else "
             "auto:\n"
             "                CUDA when a device is present, else host)\n"
             "  -h, --help    show this text\n"
             "  --version     print weft's version\n"
             "\n'weft help COMMAND' shows a command's options.\n"
             "exit codes: 0 success, 1 failure, 2 bad usage\n");
}

void cli_print_command_help(const char *name) {
  const cli_command *c = find_command(name);
  if (!c)
    return;
  printf("usage: weft %s%s%s\n\n%s\n", c->name, *c->args ? " " : "", c->args,
         c->summary);
  int backend = strstr(c->args, "--backend") != NULL;
  if (c->details || backend)
    printf("\noptions:\n%s", c->details ? c->details : "");
  if (backend)
    printf("  --backend B   host, cuda or auto (default: $WEFT_BACKEND, "
           "else auto)\n");
}

int cli_usage_error(const char *fmt, ...) {
  va_list ap;
  fputs("weft: ", stderr);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputs(" (try 'weft help')\n", stderr);
  return CLI_USAGE;
}

int cli_bad_arg(const char *cmd, const char *arg) {
  if (arg[0] == '-')
    return cli_usage_error("unknown option '%s' for '%s'", arg, cmd);
  return cli_usage_error("unexpected argument '%s' for '%s'", arg, cmd);
}

int cli_fail(const char *cmd, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "weft %s: ", cmd);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  return CLI_FAIL;
}

int cli_flag_value(int argc, char **argv, int *i, const char *flag,
                   const char **value) {
  const char *arg = argv[*i];
  size_t len = strlen(flag);
  if (strncmp(arg, flag, len) != 0)
    return 0;
  if (arg[len] == '=') {
    *value = arg + len + 1;
  } else if (arg[len] == '\0') {
    if (*i + 1 >= argc)
      return -cli_usage_error("option '%s' needs a value", flag);
    *value = argv[++*i];
  } else {
    return 0; /* a longer flag that merely starts with this one */
  }
  if (**value == '\0')
    return -cli_usage_error("option '%s' needs a value", flag);
  return 1;
}

int cli_parse_long(const char *flag, const char *text, long lo, long hi,
                   long *out) {
  char *end;
  errno = 0;
  long v = strtol(text, &end, 10);
  if (end == text || *end != '\0')
    return cli_usage_error("option '%s': '%s' is not a number", flag, text);
  if (errno == ERANGE)
    return cli_usage_error("option '%s': %s is out of range (%ld-%ld)", flag,
                           text, lo, hi);
  if (errno)
    return cli_usage_error("option '%s': '%s' is not a number", flag, text);
  if (v < lo || v > hi)
    return cli_usage_error("option '%s': %ld is out of range (%ld-%ld)", flag,
                           v, lo, hi);
  *out = v;
  return 0;
}

static int parse_backend(cli_global *g, const char *text) {
  weft_backend_kind kind;
  if (weft_backend_parse(text, &kind) != 0)
    return cli_usage_error("unknown backend '%s'; expected host, cuda or auto",
                           text);
  g->backend = kind;
  g->backend_from_flag = 1;
  return 0;
}

int cli_common_flag(cli_global *g, int argc, char **argv, int *i) {
  const char *v = NULL;
  int m = cli_flag_value(argc, argv, i, "--backend", &v);
  if (m <= 0)
    return m;
  return parse_backend(g, v) ? -CLI_USAGE : 1;
}

int cli_open_runtime(const cli_global *g, const char *cmd, weft_runtime **rt,
                     char *why, size_t why_size) {
  weft_runtime_opts opts;
  weft_runtime_opts_init(&opts);
  if (why_size)
    why[0] = '\0';
  /* Auto is resolved here rather than in weft_init so that an explicit
   * '--backend auto' overrides WEFT_BACKEND, and so that the reason CUDA was
   * passed over can be shown: the core's own fallback keeps it quiet. */
  if (g->backend == WEFT_BACKEND_AUTO) {
    if (weft_backend_built(WEFT_BACKEND_CUDA)) {
      opts.backend = WEFT_BACKEND_CUDA;
      int rc = weft_init(rt, &opts);
      if (rc == 0)
        return CLI_OK;
      const char *msg = weft_last_error_message();
      snprintf(why, why_size, "%s", *msg ? msg : weft_strerror(rc));
    } else {
      snprintf(why, why_size, "this build has no CUDA backend");
    }
    opts.backend = WEFT_BACKEND_HOST;
  } else {
    opts.backend = g->backend;
  }
  int rc = weft_init(rt, &opts);
  if (rc != 0) {
    const char *msg = weft_last_error_message();
    return cli_fail(cmd, "cannot open the %s backend: %s: %s",
                    weft_backend_name(opts.backend), weft_err_name(rc),
                    *msg ? msg : weft_strerror(rc));
  }
  return CLI_OK;
}

static int cmd_version(cli_global *g, int argc, char **argv) {
  (void)g;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      cli_print_command_help("version");
      return CLI_OK;
    }
    return cli_bad_arg("version", argv[i]);
  }
  printf("weft %s (backends built: host%s)\n", WEFT_VERSION_STRING,
         weft_backend_built(WEFT_BACKEND_CUDA) ? ", cuda" : "");
  return CLI_OK;
}

static int cmd_help(cli_global *g, int argc, char **argv) {
  (void)g;
  if (argc > 2)
    return cli_usage_error("'help' takes at most one command name");
  if (argc == 2 && strcmp(argv[1], "-h") && strcmp(argv[1], "--help")) {
    if (!find_command(argv[1]))
      return cli_usage_error("unknown command '%s'", argv[1]);
    cli_print_command_help(argv[1]);
    return CLI_OK;
  }
  print_usage(stdout);
  return CLI_OK;
}

/* A command's exit code, made a failure when what it wrote to stdout was
 * lost (a full disk, a closed pipe): `weft trace check f && ...` must not
 * pass on a verdict nobody saw. */
static int finish(int rc) {
  if (fflush(stdout) != 0 || ferror(stdout)) {
    fprintf(stderr, "weft: writing standard output failed: %s\n",
            strerror(errno));
    if (rc == CLI_OK)
      rc = CLI_FAIL;
  }
  return rc;
}

int main(int argc, char **argv) {
  cli_global g = {.backend = WEFT_BACKEND_AUTO};
  /* Checked only for a command that opens a runtime, and where no
   * --backend overrides it: help and trace need no device. */
  const char *env = getenv("WEFT_BACKEND");
  int env_bad = env && *env && weft_backend_parse(env, &g.backend) != 0;

  int i = 1;
  for (; i < argc && argv[i][0] == '-'; i++) {
    const char *arg = argv[i];
    if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
      if (i + 1 < argc)
        return cli_usage_error("'%s' takes no arguments (weft help COMMAND)",
                               arg);
      print_usage(stdout);
      return finish(CLI_OK);
    }
    if (!strcmp(arg, "--version"))
      return finish(cmd_version(&g, argc - i, argv + i));
    int m = cli_common_flag(&g, argc, argv, &i);
    if (m < 0)
      return -m;
    if (m == 0)
      return cli_usage_error("unknown option '%s'", arg);
  }
  if (i >= argc) {
    print_usage(stderr);
    return CLI_USAGE;
  }
  const cli_command *c = find_command(argv[i]);
  if (!c)
    return cli_usage_error("unknown command '%s'", argv[i]);
  if (env_bad && !g.backend_from_flag && c->run != cmd_help &&
      c->run != cmd_version && c->run != cmd_trace)
    return cli_usage_error("WEFT_BACKEND='%s' is not host, cuda or auto", env);
  return finish(c->run(&g, argc - i, argv + i));
}
