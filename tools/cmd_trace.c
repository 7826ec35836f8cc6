/* weft trace: reads a trace file (weft's own, or PyTorch's profiler output:
 * Chrome Trace Event JSON) and prints what happened on the GPU, or draws it
 * as an SVG timeline. docs/TRACE.md explains the numbers. Needs no device
 * and no runtime. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "trace/analysis.h"
#include "trace/check.h"
#include "trace/model.h"
#include "trace/svg.h"

static int is_help(const char *arg) {
  return !strcmp(arg, "-h") || !strcmp(arg, "--help");
}

static int write_svg(const char *path, const trace_model *m,
                     const trace_analysis *a, const trace_svg_opts *o) {
  int to_stdout = !strcmp(path, "-");
  FILE *f = to_stdout ? stdout : fopen(path, "w");
  if (!f)
    return cli_fail("trace", "cannot write %s", path);
  int rc = trace_svg_write(f, m, a, o);
  if (!to_stdout && fclose(f) != 0)
    rc = -1;
  if (rc != 0) {
    if (!to_stdout)
      remove(path);
    return cli_fail("trace", "writing %s failed", path);
  }
  return CLI_OK;
}

int cmd_trace(cli_global *g, int argc, char **argv) {
  (void)g;
  if (argc < 2)
    return cli_usage_error(
        "'trace' needs 'report FILE', 'svg FILE -o OUT' or 'check FILE'");
  const char *sub = argv[1];
  if (is_help(sub)) {
    cli_print_command_help("trace");
    return CLI_OK;
  }
  int report = !strcmp(sub, "report"), svg = !strcmp(sub, "svg");
  int check = !strcmp(sub, "check");
  if (!report && !svg && !check)
    return cli_usage_error("unknown 'trace' subcommand '%s'; expected report, "
                           "svg or check",
                           sub);

  const char *file = NULL, *out = NULL, *v;
  int json = 0;
  long top = 10, width = TRACE_SVG_DEFAULT_WIDTH;
  for (int i = 2; i < argc; i++) {
    const char *arg = argv[i];
    int m;
    if (is_help(arg)) {
      cli_print_command_help("trace");
      return CLI_OK;
    }
    if (report && !strcmp(arg, "--json")) {
      json = 1;
      continue;
    }
    if (report && (m = cli_flag_value(argc, argv, &i, "--top", &v)) != 0) {
      if (m < 0)
        return -m;
      if (cli_parse_long("--top", v, 1, 1000000, &top))
        return CLI_USAGE;
      continue;
    }
    if (svg && (m = cli_flag_value(argc, argv, &i, "-o", &v)) != 0) {
      if (m < 0)
        return -m;
      out = v;
      continue;
    }
    if (svg && (m = cli_flag_value(argc, argv, &i, "--width", &v)) != 0) {
      if (m < 0)
        return -m;
      if (cli_parse_long("--width", v, TRACE_SVG_MIN_WIDTH, TRACE_SVG_MAX_WIDTH,
                         &width))
        return CLI_USAGE;
      continue;
    }
    if ((arg[0] == '-' && arg[1] != '\0') || file) /* "-" is stdin */
      return cli_bad_arg("trace", arg);
    file = arg;
  }
  if (!file)
    return cli_usage_error("'trace %s' needs a trace FILE", sub);
  if (svg && !out)
    return cli_usage_error("'trace svg' needs -o OUT.svg");

  trace_model model;
  trace_error err;
  if (trace_model_load_file(&model, file, &err) != 0) {
    trace_model_free(&model);
    return cli_fail("trace", "%s: %s", file, err.message);
  }
  if (check) {
    /* Problems on stdout, a line each; the verdict on stderr. */
    long n = trace_check(stdout, &model, 20);
    size_t ops = model.nops, flows = model.nflow_starts;
    trace_model_free(&model);
    if (n < 0)
      return cli_fail("trace", "%s: out of memory checking", file);
    if (n > 0)
      return cli_fail("trace", "%s: %ld problem%s (the first %ld above)", file,
                      n, n == 1 ? "" : "s", n < 20 ? n : 20L);
    printf("%s: ok: %zu operations, %zu launch arrows, slices nested\n", file,
           ops, flows);
    return CLI_OK;
  }
  trace_analysis an;
  int rc = CLI_OK;
  if (trace_analyze(&model, &an) != 0) {
    rc = cli_fail("trace", "%s: out of memory analysing %zu operations", file,
                  model.nops);
  } else if (report) {
    trace_report_opts o = {.source = file, .json = json, .top = (int)top};
    if (trace_report_print(stdout, &model, &an, &o) != 0 || fflush(stdout))
      rc = cli_fail("trace", "writing the report failed");
  } else {
    trace_svg_opts o = {.width = (int)width, .title = file};
    rc = write_svg(out, &model, &an, &o);
  }
  trace_analysis_free(&an);
  trace_model_free(&model);
  return rc;
}
