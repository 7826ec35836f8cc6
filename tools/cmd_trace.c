#define _POSIX_C_SOURCE 200809L /* out_file.h */
/* weft trace: reads a trace file (weft's own, or PyTorch's profiler output:
 * Chrome Trace Event JSON) and prints what happened on the GPU, or draws it
 * as an SVG timeline. docs/TRACE.md explains the numbers. Needs no device
 * and no runtime. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analysis.h"
#include "cli.h"
#include "clip.h"
#include "compat.h"
#include "explain.h"
#include "model.h"
#include "out_file.h"
#include "svg.h"

static int is_help(const char *arg) {
  return !strcmp(arg, "-h") || !strcmp(arg, "--help");
}

static int write_svg(const char *path, const trace_model *m,
                     const trace_analysis *a, const trace_svg_opts *o) {
  out_file out;
  if (out_file_open(&out, path) != 0)
    return cli_fail("trace", "cannot write %s: %s", path, strerror(errno));
  int ok = trace_svg_write(out.f, m, a, o) == 0;
  if (out_file_close(&out, ok) != 0)
    return cli_fail("trace", "writing %s failed%s%s", path, errno ? ": " : "",
                    errno ? strerror(errno) : "");
  return CLI_OK;
}

/* --range NAME: clips model to the time inside the ranges of that name
 * and notes them in o; an unknown name is a usage error that lists the
 * names the trace has, or, once other files' reports are out (later),
 * a failure. */
static int clip_to_range(trace_model *model, const char *file,
                         const char *range, trace_report_opts *o, int later) {
  if (!range)
    return CLI_OK;
  trace_clip_info info;
  int r = trace_model_clip(model, range, &info);
  if (r < 0)
    return cli_fail("trace", "%s: out of memory", file);
  if (r > 0) {
    char names[1024];
    size_t n = trace_range_names(model, names, sizeof names);
    if (later)
      return cli_fail("trace", "%s has no range named '%s'%s%s", file, range,
                      n ? "; its ranges: " : " (it has no ranges)",
                      n ? names : "");
    if (n == 0)
      return cli_usage_error("%s has no range named '%s': it has no ranges "
                             "(weft_range_push, PyTorch's record_function)",
                             file, range);
    return cli_usage_error("%s has no range named '%s'; its range%s: %s", file,
                           range, n == 1 ? "" : "s", names);
  }
  o->range = range;
  o->ranges = info.ranges;
  o->inside_us = info.inside;
  return CLI_OK;
}

/* ---- several files: one per rank ---- */

enum { MAX_FILES = 1024 };

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The .json files of directory dir, sorted, appended to files[*n]. */
static int add_dir(const char *dir, char **files, int *n) {
  DIR *d = opendir(dir);
  if (!d)
    return cli_fail("trace", "cannot read the directory %s", dir);
  int first = *n, rc = CLI_OK;
  struct dirent *e;
  while (rc == CLI_OK && (e = readdir(d)) != NULL) {
    size_t len = strlen(e->d_name);
    if (len < 6 || strcmp(e->d_name + len - 5, ".json") != 0)
      continue;
    if (*n == MAX_FILES) {
      rc = cli_fail("trace", "%s: more than %d trace files", dir, MAX_FILES);
      break;
    }
    size_t sz = strlen(dir) + len + 2;
    char *path = malloc(sz);
    if (!path) {
      rc = cli_fail("trace", "out of memory");
      break;
    }
    snprintf(path, sz, "%s/%s", dir, e->d_name);
    files[(*n)++] = path;
  }
  closedir(d);
  qsort(files + first, (size_t)(*n - first), sizeof *files, cmp_str);
  if (rc == CLI_OK && *n == first)
    rc = cli_fail("trace", "%s: no .json trace files in it", dir);
  return rc;
}

/* What the totals table keeps of one rank's report. */
typedef struct rank_row {
  const char *file;
  int64_t rank;
  double span, busy, wait;
  size_t tasks, waits;
  double outside; /* of wait: for something outside weft (MPI) */
} rank_row;

/* Each file's report under its rank, then a table of every rank and the
 * total: the multi-rank reading HTA does of a directory of traces. */
static int report_ranks(char **files, int n, long top, const char *range) {
  rank_row *rows = calloc((size_t)n, sizeof *rows);
  if (!rows)
    return cli_fail("trace", "out of memory");
  int rc = CLI_OK;
  for (int i = 0; i < n && rc == CLI_OK; i++) {
    trace_model model;
    trace_error err;
    if (trace_model_load_file(&model, files[i], &err) != 0) {
      trace_model_free(&model);
      rc = cli_fail("trace", "%s: %s", files[i], err.message);
      break;
    }
    trace_report_opts o = {.source = files[i], .top = (int)top};
    if ((rc = clip_to_range(&model, files[i], range, &o, i > 0)) != CLI_OK) {
      trace_model_free(&model);
      break;
    }
    trace_analysis an;
    if (trace_analyze(&model, &an) != 0) {
      trace_model_free(&model);
      rc = cli_fail("trace", "%s: out of memory analysing", files[i]);
      break;
    }
    rank_row *r = &rows[i];
    r->file = files[i];
    r->rank = model.rank;
    r->span = an.all.span;
    r->busy = an.all.busy;
    r->tasks = an.ntasks;
    for (size_t t = 0; t < an.ntasks; t++) {
      r->wait += an.tasks[t].wait;
      r->waits += an.tasks[t].waits;
      r->outside += an.tasks[t].ext_wait;
    }
    if (model.rank >= 0)
      printf("==== rank %lld: %s\n", (long long)model.rank, files[i]);
    else
      printf("==== no rank in the header: %s\n", files[i]);
    if (trace_report_print(stdout, &model, &an, &o) != 0)
      rc = cli_fail("trace", "writing the report failed");
    putchar('\n');
    trace_analysis_free(&an);
    trace_model_free(&model);
  }
  if (rc == CLI_OK) {
    double span = 0, busy = 0, wait = 0, outside = 0;
    size_t tasks = 0, waits = 0;
    printf("==== every rank: GPU time and the tasks' waits (for the GPU, "
           "and outside weft: weft_wait_until, MPI messages)\n");
    printf("  %6s %12s %12s %7s %14s %12s %7s %7s  %s\n", "rank", "span ms",
           "busy ms", "busy %", "task wait ms", "outside ms", "waits", "tasks",
           "file");
    for (int i = 0; i < n; i++) {
      const rank_row *r = &rows[i];
      char rk[24];
      snprintf(rk, sizeof rk, r->rank >= 0 ? "%lld" : "-", (long long)r->rank);
      printf("  %6s %12.3f %12.3f %7.1f %14.3f %12.3f %7zu %7zu  %s\n", rk,
             r->span / 1e3, r->busy / 1e3,
             r->span > 0 ? 100.0 * r->busy / r->span : 0.0, r->wait / 1e3,
             r->outside / 1e3, r->waits, r->tasks, r->file);
      span = r->span > span ? r->span : span;
      busy += r->busy;
      wait += r->wait;
      outside += r->outside;
      tasks += r->tasks;
      waits += r->waits;
    }
    printf("  %6s %12.3f %12.3f %7s %14.3f %12.3f %7zu %7zu  (span: the "
           "longest rank's)\n",
           "all", span / 1e3, busy / 1e3, "", wait / 1e3, outside / 1e3, waits,
           tasks);
    if (fflush(stdout))
      rc = cli_fail("trace", "writing the report failed");
  }
  free(rows);
  return rc;
}

int cmd_trace(cli_global *g, int argc, char **argv) {
  (void)g;
  if (argc < 2)
    return cli_usage_error(
        "'trace' needs 'report FILE', 'explain FILE', 'svg FILE -o OUT' or "
        "'check FILE'");
  const char *sub = argv[1];
  if (is_help(sub)) {
    cli_print_command_help("trace");
    return CLI_OK;
  }
  int report = !strcmp(sub, "report"), svg = !strcmp(sub, "svg");
  int check = !strcmp(sub, "check"), explain = !strcmp(sub, "explain");
  if (!report && !svg && !check && !explain)
    return cli_usage_error("unknown 'trace' subcommand '%s'; expected report, "
                           "explain, svg or check",
                           sub);

  const char *file = NULL, *out = NULL, *range = NULL, *v;
  static char *files[MAX_FILES];
  int nfiles = 0, json = 0, listed = 0;
  long top = 0, width = TRACE_SVG_DEFAULT_WIDTH;
  for (int i = 2; i < argc; i++) {
    const char *arg = argv[i];
    int m;
    if (is_help(arg)) {
      cli_print_command_help("trace");
      return CLI_OK;
    }
    if ((report || explain) && !strcmp(arg, "--json")) {
      json = 1;
      continue;
    }
    if ((report || explain) &&
        (m = cli_flag_value(argc, argv, &i, "--top", &v)) != 0) {
      if (m < 0)
        return -m;
      if (cli_parse_long("--top", v, 1, 1000000, &top))
        return CLI_USAGE;
      continue;
    }
    if ((report || explain) &&
        (m = cli_flag_value(argc, argv, &i, "--range", &v)) != 0) {
      if (m < 0)
        return -m;
      range = v;
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
    if (arg[0] == '-' && arg[1] != '\0') /* "-" is stdin */
      return cli_bad_arg("trace", arg);
    /* report takes several files or directories, one per rank */
    struct stat st;
    if (report && strcmp(arg, "-") != 0 && stat(arg, &st) == 0 &&
        S_ISDIR(st.st_mode)) {
      int r = add_dir(arg, files, &nfiles);
      if (r != CLI_OK)
        return r;
      listed = 2;
      continue;
    }
    if (file && !report)
      return cli_bad_arg("trace", arg);
    if (nfiles == MAX_FILES)
      return cli_usage_error("more than %d trace files", MAX_FILES);
    files[nfiles++] = (char *)arg;
    listed++;
    file = arg;
  }
  if (!file && nfiles == 0)
    return cli_usage_error("'trace %s' needs a trace FILE", sub);
  if (listed > 1) {
    if (json)
      return cli_usage_error("'trace report --json' reads one file at a time");
    return report_ranks(files, nfiles, top ? top : 10, range);
  }
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
    long n = trace_compat_problems(stdout, &model, 20);
    trace_compat_notes(stdout, &model);
    size_t ops = model.nops, flows = model.nflow_starts;
    long long dropped = (long long)model.dropped;
    trace_model_free(&model);
    if (n < 0)
      return cli_fail("trace", "%s: out of memory checking", file);
    /* A valid file with records dropped passes, and says it is partial. */
    if (dropped > 0)
      printf("%s: incomplete: the tracer dropped %lld records for want of "
             "memory\n",
             file, dropped);
    if (n > 0)
      return cli_fail("trace", "%s: %ld problem%s (the first %ld above)", file,
                      n, n == 1 ? "" : "s", n < 20 ? n : 20L);
    printf("%s: ok: %zu operations, %zu launch arrows, slices nested\n", file,
           ops, flows);
    return CLI_OK;
  }
  trace_report_opts ro = {
      .source = file, .json = json, .top = top ? (int)top : 10};
  int rc = clip_to_range(&model, file, range, &ro, 0);
  if (rc == CLI_OK && explain) {
    trace_explanation ex;
    char label[512];
    snprintf(label, sizeof label, "%s%s%s%s", file,
             range ? " (inside the ranges '" : "", range ? range : "",
             range ? "')" : "");
    trace_explain_opts o = {
        .source = label, .json = json, .top = top ? (int)top : 3};
    if (trace_explain(&model, &ex) != 0)
      rc = cli_fail("trace", "%s: out of memory explaining %zu operations",
                    file, model.nops);
    else if (trace_explain_print(stdout, &model, &ex, &o) != 0 ||
             fflush(stdout))
      rc = cli_fail("trace", "writing the explanation failed");
    trace_explanation_free(&ex);
    trace_model_free(&model);
    return rc;
  }
  if (rc != CLI_OK) {
    trace_model_free(&model);
    return rc;
  }
  trace_analysis an;
  if (trace_analyze(&model, &an) != 0) {
    rc = cli_fail("trace", "%s: out of memory analysing %zu operations", file,
                  model.nops);
  } else if (report) {
    if (trace_report_print(stdout, &model, &an, &ro) != 0 || fflush(stdout))
      rc = cli_fail("trace", "writing the report failed");
  } else {
    /* The lost stretches by cause, when there is memory to find them. */
    trace_explanation ex;
    int explained = trace_explain(&model, &ex) == 0;
    trace_svg_opts o = {
        .width = (int)width, .title = file, .explain = explained ? &ex : NULL};
    rc = write_svg(out, &model, &an, &o);
    trace_explanation_free(&ex);
  }
  trace_analysis_free(&an);
  trace_model_free(&model);
  return rc;
}
