#define _POSIX_C_SOURCE 200809L /* out_file.h */
/* The benchmark runner: the scenario registry, the helpers of bench.h, the
 * table on stdout, the JSON file and the charts (plot.c draws them). */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <pthread.h>
#include <sys/stat.h>

#include "bench.h"
#include "json_write.h"
#include "model.h"
#include "out_file.h"
#include "plot.h"
#include "scenarios.h"

/* ---- the registry ---- */

#define BENCH_DECLARE(name) extern const bench_scenario bench_sc_##name;
BENCH_SCENARIOS(BENCH_DECLARE)
#undef BENCH_DECLARE

static const bench_scenario *const all_scenarios[] = {
#define BENCH_ENTRY(name) &bench_sc_##name,
    BENCH_SCENARIOS(BENCH_ENTRY)
#undef BENCH_ENTRY
};

enum { NSCENARIOS = sizeof all_scenarios / sizeof all_scenarios[0] };

const bench_scenario *const *bench_scenarios(size_t *n) {
  *n = NSCENARIOS;
  return all_scenarios;
}

const bench_scenario *bench_find(const char *name) {
  for (size_t i = 0; i < NSCENARIOS; i++)
    if (strcmp(all_scenarios[i]->name, name) == 0)
      return all_scenarios[i];
  return NULL;
}

/* ---- the context ---- */

typedef struct bench_row {
  const char *scenario;
  char *variant, *unit, *notes;
  bench_stats st;
  int nsamples;
  int group; /* bench_group() calls before the row, in its scenario */
  int baseline;
  int has_ratio;
  double ratio;
  const char *peer_key, *peer_side; /* bench_peer, or NULL */
  const bench_chart *chart;         /* bench_plot, or NULL */
  char *series;
  double x;
  int ref;
  int skipped; /* bench_skip: no samples, the reason in notes */
} bench_row;

typedef struct failure {
  const char *scenario;
  char *message;
} failure;

struct bench_ctx {
  const bench_opts *o;
  int repeat;
  const bench_scenario *sc;         /* running now */
  int group;                        /* its current group of rows */
  const char *peer_key, *peer_side; /* for the next row (bench_peer) */
  const bench_chart *chart;         /* for the next row (bench_plot) */
  const char *series;
  double x;
  int ref;
  pthread_mutex_t lock; /* err and failed, from tasks and threads */
  int failed;
  char err[1024];
  bench_row *rows;
  size_t nrows, cap;
  failure *failures;
  size_t nfailures;
  char trace[4096]; /* this scenario's trace file, or "" */
  int trace_claimed;
  const char *untraced; /* bench_untraced */
};

weft_backend_kind bench_backend(const bench_ctx *c) { return c->o->backend; }
int bench_quick(const bench_ctx *c) { return c->o->quick; }
int bench_repeat(const bench_ctx *c) { return c->repeat; }
long bench_size(const bench_ctx *c, long full, long quick) {
  return c->o->quick ? quick : full;
}

/* ---- timing ---- */

uint64_t bench_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void bench_samples_add(bench_samples *s, double value) {
  if (s->n < BENCH_MAX_REPEAT)
    s->v[s->n++] = value;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

bench_stats bench_stats_of(const bench_samples *s) {
  bench_stats st = {0, 0, 0};
  if (s->n == 0)
    return st;
  double v[BENCH_MAX_REPEAT];
  memcpy(v, s->v, (size_t)s->n * sizeof *v);
  qsort(v, (size_t)s->n, sizeof *v, cmp_double);
  int n = s->n;
  st.min = v[0];
  st.max = v[n - 1];
  st.median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  return st;
}

/* ---- failures ---- */

static int vfail(bench_ctx *c, const char *fmt, va_list ap) {
  pthread_mutex_lock(&c->lock);
  if (!c->failed) {
    c->failed = 1;
    vsnprintf(c->err, sizeof c->err, fmt, ap);
  }
  pthread_mutex_unlock(&c->lock);
  return BENCH_FAIL;
}

int bench_fail(bench_ctx *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfail(c, fmt, ap);
  va_end(ap);
  return BENCH_FAIL;
}

int bench_failed(bench_ctx *c) {
  pthread_mutex_lock(&c->lock);
  int f = c->failed;
  pthread_mutex_unlock(&c->lock);
  return f;
}

int bench_fail_weft(bench_ctx *c, int rc, const char *call) {
  const char *msg = weft_last_error_message();
  return bench_fail(c, "%s: %s: %s", call, weft_err_name(rc),
                    *msg ? msg : weft_strerror(rc));
}

/* ---- rows ---- */

static char *dup_str(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d)
    memcpy(d, s, n);
  return d;
}

/* A new row, filled but for its samples; NULL after bench_fail. */
static bench_row *add_row(bench_ctx *c, const char *variant, const char *unit,
                          const char *text) {
  if (c->nrows == c->cap) {
    size_t cap = c->cap ? 2 * c->cap : 32;
    bench_row *v = realloc(c->rows, cap * sizeof *v);
    if (!v) {
      bench_fail(c, "out of memory");
      return NULL;
    }
    c->rows = v;
    c->cap = cap;
  }
  bench_row *r = &c->rows[c->nrows];
  memset(r, 0, sizeof *r);
  r->scenario = c->sc->name;
  r->variant = dup_str(variant);
  r->unit = dup_str(unit);
  r->notes = dup_str(text);
  if (c->chart) {
    r->chart = c->chart;
    r->series = dup_str(c->series);
    r->x = c->x;
    r->ref = c->ref;
    c->chart = NULL;
  }
  if (!r->variant || !r->unit || !r->notes || (r->chart && !r->series)) {
    free(r->variant);
    free(r->unit);
    free(r->notes);
    free(r->series);
    bench_fail(c, "out of memory");
    return NULL;
  }
  r->group = c->group;
  r->peer_key = c->peer_key;
  r->peer_side = c->peer_side;
  c->peer_key = c->peer_side = NULL;
  c->nrows++;
  return r;
}

int bench_report(bench_ctx *c, const char *variant, const char *unit,
                 const bench_samples *s, unsigned flags, const char *notes,
                 ...) {
  if (s->n == 0)
    return bench_fail(c, "%s: no samples to report", variant);
  char text[512] = "";
  if (notes) {
    va_list ap;
    va_start(ap, notes);
    vsnprintf(text, sizeof text, notes, ap);
    va_end(ap);
  }
  bench_row *r = add_row(c, variant, unit, text);
  if (!r)
    return BENCH_FAIL;
  r->st = bench_stats_of(s);
  r->nsamples = s->n;
  r->baseline = (flags & BENCH_BASELINE) != 0;
  return 0;
}

int bench_skip(bench_ctx *c, const char *variant, const char *unit,
               const char *why, ...) {
  char text[512] = "skipped: ";
  va_list ap;
  va_start(ap, why);
  vsnprintf(text + strlen(text), sizeof text - strlen(text), why, ap);
  va_end(ap);
  c->chart = NULL; /* a skipped row draws nothing */
  bench_row *r = add_row(c, variant, unit, text);
  if (!r)
    return BENCH_FAIL;
  r->skipped = 1;
  return 0;
}

void bench_group(bench_ctx *c) { c->group++; }

void bench_peer(bench_ctx *c, const char *key, const char *side) {
  c->peer_key = key;
  c->peer_side = side;
}

void bench_plot(bench_ctx *c, const bench_chart *chart, const char *series,
                double x) {
  c->chart = chart;
  c->series = series;
  c->x = x;
  c->ref = 0;
}

void bench_plot_ref(bench_ctx *c, const bench_chart *chart, const char *label) {
  bench_plot(c, chart, label, 0);
  c->ref = 1;
}

/* ---- runtimes ---- */

const char *bench_trace_claim(bench_ctx *c) {
  if (!c->trace[0] || c->trace_claimed)
    return "";
  c->trace_claimed = 1;
  return c->trace;
}

void bench_untraced(bench_ctx *c, const char *why) { c->untraced = why; }

int bench_runtime_open(bench_ctx *c, int workers, weft_runtime **rt) {
  weft_runtime_opts opts;
  weft_runtime_opts_init(&opts);
  opts.backend = c->o->backend;
  opts.workers = workers;
  opts.trace_path = bench_trace_claim(c);
  BENCH_TRY(c, weft_init(rt, &opts));
  return 0;
}

int bench_runtime_open_with(bench_ctx *c, const bench_rt_opts *o,
                            weft_runtime **rt) {
  weft_runtime_opts opts;
  weft_runtime_opts_init(&opts);
  opts.backend = c->o->backend;
  opts.workers = o->workers;
  opts.stack_size = o->stack_size;
  opts.trace_path = o->trace_path ? o->trace_path : bench_trace_claim(c);
  if (o->no_check)
    opts.check = 0;
  opts.host_devices = o->host_devices;
  opts.data_limit = o->data_limit;
  if (o->prefetch)
    opts.data_prefetch = 1;
  BENCH_TRY(c, weft_init(rt, &opts));
  return 0;
}

int bench_runtime_close(bench_ctx *c, weft_runtime **rt) {
  if (!*rt)
    return 0;
  int rc = weft_shutdown(*rt);
  if (rc)
    return bench_fail_weft(c, rc, "weft_shutdown");
  *rt = NULL;
  return 0;
}

int bench_in_task(bench_ctx *c, weft_runtime *rt, weft_task_fn fn, void *arg) {
  weft_task *t;
  weft_task_opts opts;
  weft_task_opts_init(&opts);
  opts.name = c->sc->name;
  BENCH_TRY(c, weft_task_spawn(rt, &t, fn, arg, &opts));
  BENCH_TRY(c, weft_task_join(t));
  return 0;
}

int bench_tasks_on(bench_ctx *c, weft_runtime *rt, int n, weft_task_fn fn,
                   void *jobs, size_t job_size, const int *dev) {
  weft_task *t[BENCH_TASKS_MAX];
  if (n > BENCH_TASKS_MAX)
    return bench_fail(c, "bench_tasks_on: %d tasks (at most %d)", n,
                      BENCH_TASKS_MAX);
  int spawned = 0, rc = 0;
  for (; spawned < n; spawned++) {
    weft_task_opts o;
    weft_task_opts_init(&o);
    o.device = dev[spawned];
    int e = weft_task_spawn(rt, &t[spawned], fn,
                            (char *)jobs + (size_t)spawned * job_size, &o);
    if (e) {
      rc = bench_fail_weft(c, e, "weft_task_spawn");
      break;
    }
  }
  for (int i = 0; i < spawned; i++)
    if (weft_task_join(t[i]) != 0 && rc == 0)
      rc = bench_fail(c, "weft_task_join: %s", weft_last_error_message());
  return rc ? rc : bench_failed(c) ? BENCH_FAIL : 0;
}

int bench_fetch(bench_ctx *c, void *dst, const void *src, size_t n) {
  /* Through pinned memory: the plainest copy there is, so that a check
   * does not depend on how weft stages copies to pageable memory. */
  void *pin;
  BENCH_TRY(c, weft_pinned_alloc(n, &pin));
  int rc = weft_copy(pin, src, n);
  const char *call = "weft_copy";
  if (rc == 0) {
    rc = weft_sync();
    call = "weft_sync";
  }
  if (rc == 0)
    memcpy(dst, pin, n);
  else
    bench_fail_weft(c, rc, call);
  int e = weft_pinned_free(pin);
  if (e && rc == 0)
    rc = bench_fail_weft(c, e, "weft_pinned_free");
  return rc ? BENCH_FAIL : 0;
}

/* ---- memory ---- */

int bench_rss(size_t *rss, size_t *peak) {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f)
    return -1;
  char line[256];
  int found = 0;
  while (fgets(line, sizeof line, f)) {
    unsigned long kib;
    if (sscanf(line, "VmRSS: %lu kB", &kib) == 1) {
      *rss = (size_t)kib * 1024;
      found |= 1;
    } else if (sscanf(line, "VmHWM: %lu kB", &kib) == 1) {
      *peak = (size_t)kib * 1024;
      found |= 2;
    }
  }
  fclose(f);
  return found == 3 ? 0 : -1;
}

void bench_trim(void) {
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

/* ---- the table ---- */

/* Four significant digits at most, never an exponent for ordinary sizes. */
static void fmt_num(char *buf, size_t len, double v) {
  double a = v < 0 ? -v : v;
  if (a >= 1000 || a == 0)
    snprintf(buf, len, "%.0f", v);
  else if (a >= 100)
    snprintf(buf, len, "%.1f", v);
  else if (a >= 10)
    snprintf(buf, len, "%.2f", v);
  else if (a >= 0.001)
    snprintf(buf, len, "%.3f", v);
  else
    snprintf(buf, len, "%.3g", v);
}

enum { W_SC = 13, W_VAR = 40, W_NUM = 9, W_UNIT = 7, W_RATIO = 8 };

static void print_header(FILE *f) {
  fprintf(f, "%-*s %-*s %*s %*s   %*s %-*s %*s  %s\n", W_SC, "scenario", W_VAR,
          "variant", W_NUM, "median", W_NUM, "min", W_NUM, "max", W_UNIT,
          "unit", W_RATIO, "ratio", "notes");
}

static void print_row(FILE *f, const bench_row *r) {
  char med[32], lo[32], hi[32], ratio[32];
  fmt_num(med, sizeof med, r->st.median);
  fmt_num(lo, sizeof lo, r->st.min);
  fmt_num(hi, sizeof hi, r->st.max);
  if (r->skipped) {
    fprintf(f, "%-*s %-*s %*s %*s   %*s %-*s %*s  %s\n", W_SC, r->scenario,
            W_VAR, r->variant, W_NUM, "skipped", W_NUM, "", W_NUM, "", W_UNIT,
            r->unit, W_RATIO, "-", r->notes);
    return;
  }
  if (r->baseline)
    snprintf(ratio, sizeof ratio, "baseline");
  else if (r->has_ratio) {
    /* As many digits as the figures get: "%.2f" printed 0.00x for the
     * 0.002 of a spawn against pthread_create. */
    fmt_num(ratio, sizeof ratio - 1, r->ratio);
    strcat(ratio, "x");
  } else
    snprintf(ratio, sizeof ratio, "-");
  fprintf(f, "%-*s %-*s %*s %*s - %*s %-*s %*s  %s\n", W_SC, r->scenario, W_VAR,
          r->variant, W_NUM, med, W_NUM, lo, W_NUM, hi, W_UNIT, r->unit,
          W_RATIO, ratio, r->notes);
}

/* Each row's ratio: its median over the median of its scenario's baseline
 * row in the same unit and group. */
static void compute_ratios(bench_row *rows, size_t n) {
  for (size_t i = 0; i < n; i++) {
    rows[i].has_ratio = 0;
    for (size_t j = 0; j < n && !rows[i].skipped; j++) {
      if (!rows[j].baseline || rows[j].group != rows[i].group ||
          strcmp(rows[j].unit, rows[i].unit) != 0)
        continue;
      if (rows[j].st.median != 0) {
        rows[i].has_ratio = 1;
        rows[i].ratio = rows[i].st.median / rows[j].st.median;
      }
      break;
    }
  }
}

/* ---- JSON ---- */

static void json_num(FILE *f, double v) { fprintf(f, "%.6g", v); }

static int write_json(const bench_ctx *c, const char *path) {
  out_file out;
  if (out_file_open(&out, path) != 0)
    return -1;
  FILE *f = out.f;
  fprintf(f, "{\n  \"weft_version\": ");
  json_write_string(f, WEFT_VERSION_STRING);
  fprintf(f, ",\n  \"backend\": ");
  json_write_string(f, weft_backend_name(c->o->backend));
  fprintf(f, ",\n  \"device\": ");
  json_write_string(f, c->o->device ? c->o->device : "");
  fprintf(f, ",\n  \"quick\": %s,\n  \"repeat\": %d,\n  \"ok\": %s,\n",
          c->o->quick ? "true" : "false", c->repeat,
          c->nfailures ? "false" : "true");
  fprintf(f, "  \"failures\": [");
  for (size_t i = 0; i < c->nfailures; i++) {
    fprintf(f, "%s\n    {\"scenario\": ", i ? "," : "");
    json_write_string(f, c->failures[i].scenario);
    fprintf(f, ", \"message\": ");
    json_write_string(f, c->failures[i].message);
    fputc('}', f);
  }
  fprintf(f, "%s],\n  \"rows\": [", c->nfailures ? "\n  " : "");
  for (size_t i = 0; i < c->nrows; i++) {
    const bench_row *r = &c->rows[i];
    fprintf(f, "%s\n    {\"scenario\": ", i ? "," : "");
    json_write_string(f, r->scenario);
    fprintf(f, ", \"variant\": ");
    json_write_string(f, r->variant);
    if (r->skipped) {
      fprintf(f, ", \"median\": null, \"min\": null, \"max\": null, "
                 "\"skipped\": true");
    } else {
      fprintf(f, ", \"median\": ");
      json_num(f, r->st.median);
      fprintf(f, ", \"min\": ");
      json_num(f, r->st.min);
      fprintf(f, ", \"max\": ");
      json_num(f, r->st.max);
    }
    fprintf(f, ", \"unit\": ");
    json_write_string(f, r->unit);
    fprintf(f, ", \"ratio\": ");
    if (r->has_ratio)
      json_num(f, r->ratio);
    else
      fputs("null", f);
    fprintf(f, ", \"baseline\": %s, \"repeats\": %d, \"notes\": ",
            r->baseline ? "true" : "false", r->nsamples);
    json_write_string(f, r->notes);
    if (r->peer_key) {
      fprintf(f, ", \"peer\": {\"key\": ");
      json_write_string(f, r->peer_key);
      fprintf(f, ", \"side\": ");
      json_write_string(f, r->peer_side);
      fputc('}', f);
    }
    if (r->chart) {
      fprintf(f, ", \"plot\": {\"chart\": ");
      json_write_string(f, r->chart->name);
      fprintf(f, ", \"series\": ");
      json_write_string(f, r->series);
      fprintf(f, ", \"x\": ");
      json_num(f, r->x);
      fprintf(f, ", \"reference\": %s}", r->ref ? "true" : "false");
    }
    fputc('}', f);
  }
  fprintf(f, "%s]\n}\n", c->nrows ? "\n  " : "");
  return out_file_close(&out, 1);
}

/* ---- charts ---- */

static int write_charts(const bench_ctx *c, const char *dir, FILE *out) {
  if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
    fprintf(stderr, "weft bench: cannot make %s: %s\n", dir, strerror(errno));
    return -1;
  }
  bench_plot_point *p = malloc((c->nrows ? c->nrows : 1) * sizeof *p);
  if (!p) {
    fprintf(stderr, "weft bench: out of memory for the charts\n");
    return -1;
  }
  size_t n = 0;
  for (size_t i = 0; i < c->nrows; i++) {
    const bench_row *r = &c->rows[i];
    if (r->chart)
      p[n++] = (bench_plot_point){.chart = r->chart,
                                  .series = r->series,
                                  .x = r->x,
                                  .ref = r->ref,
                                  .y = r->st.median,
                                  .lo = r->st.min,
                                  .hi = r->st.max,
                                  .unit = r->unit};
  }
  int rc = bench_plot_write(p, n, dir, out, stderr);
  free(p);
  return rc;
}

/* ---- running ---- */

/* The trace file of scenario sc: the WEFT_TRACE path itself when it is the
 * only one to run, else with "-NAME" before a ".json" ending (or at the
 * end), so that scenarios do not overwrite each other's. */
static void trace_path_of(bench_ctx *c, const bench_scenario *sc, int several) {
  const char *p = c->o->trace_path;
  size_t n = strlen(p);
  if (!several) {
    snprintf(c->trace, sizeof c->trace, "%s", p);
    return;
  }
  size_t stem = n >= 5 && strcmp(p + n - 5, ".json") == 0 ? n - 5 : n;
  snprintf(c->trace, sizeof c->trace, "%.*s-%s%s", (int)stem, p, sc->name,
           p + stem);
}

/* After a scenario run under WEFT_TRACE: says on stderr where its trace
 * is, or why it wrote none or one without operations. */
static void trace_report(bench_ctx *c, const bench_scenario *sc) {
  const char *why = c->untraced ? c->untraced
                                : "none of its runtimes recorded one (a "
                                  "scenario that traces nothing says why "
                                  "with bench_untraced)";
  if (!c->trace_claimed) {
    fprintf(stderr,
            "weft bench: %s: WEFT_TRACE: no trace written: it opens no "
            "runtime through bench_runtime_open%s%s\n",
            sc->name, c->untraced ? ": " : "", c->untraced ? c->untraced : "");
    return;
  }
  if (strstr(c->trace, "%r")) { /* the runtime expands it (docs/ENV.md) */
    fprintf(stderr,
            "weft bench: %s: WEFT_TRACE: written with %%r replaced by the "
            "rank; not read back here\n",
            sc->name);
    return;
  }
  trace_model m;
  trace_error err;
  if (trace_model_load_file(&m, c->trace, &err) != 0)
    fprintf(stderr, "weft bench: %s: WEFT_TRACE: %s: %s\n", sc->name, c->trace,
            err.message);
  else if (m.nops == 0)
    fprintf(stderr, "weft bench: %s: WEFT_TRACE: %s holds no operations: %s\n",
            sc->name, c->trace, why);
  else
    fprintf(stderr,
            "weft bench: %s: WEFT_TRACE: %zu operations of its first "
            "runtime in %s (its timings include the tracer's cost)\n",
            sc->name, m.nops, c->trace);
  trace_model_free(&m);
}

static int run_one(bench_ctx *c, const bench_scenario *sc, FILE *out,
                   int several) {
  c->sc = sc;
  c->trace[0] = '\0';
  c->trace_claimed = 0;
  c->untraced = NULL;
  if (c->o->trace_path && *c->o->trace_path)
    trace_path_of(c, sc, several);
  c->group = 0;
  c->peer_key = c->peer_side = NULL;
  c->chart = NULL;
  c->failed = 0;
  c->err[0] = '\0';
  size_t first = c->nrows;
  uint64_t t0 = bench_now_ns();
  int rc = sc->run(c);
  if (rc == 0 && bench_failed(c))
    rc = BENCH_FAIL; /* a task failed but the scenario went on */
  compute_ratios(c->rows + first, c->nrows - first);
  for (size_t i = first; i < c->nrows; i++)
    print_row(out, &c->rows[i]);
  /* How long each took: what plans a time-limited run of a few. */
  fprintf(out, "%-*s (%.1f s)\n", W_SC, sc->name,
          (double)(bench_now_ns() - t0) / 1e9);
  fflush(out);
  if (rc == 0 && c->trace[0])
    trace_report(c, sc);
  if (rc == 0)
    return 0;
  const char *why = c->err[0] ? c->err : "failed without a message";
  fprintf(stderr, "weft bench: %s: FAILED: %s\n", sc->name, why);
  failure *v = realloc(c->failures, (c->nfailures + 1) * sizeof *c->failures);
  if (v) {
    c->failures = v;
    v[c->nfailures].scenario = sc->name;
    v[c->nfailures].message = dup_str(why);
    if (v[c->nfailures].message)
      c->nfailures++;
  }
  return -1;
}

int bench_run(const bench_opts *o) {
  bench_ctx c;
  memset(&c, 0, sizeof c);
  c.o = o;
  c.repeat = o->repeat > 0 ? o->repeat : o->quick ? 3 : 7;
  if (c.repeat > BENCH_MAX_REPEAT)
    c.repeat = BENCH_MAX_REPEAT;
  pthread_mutex_init(&c.lock, NULL);
  FILE *out = o->out ? o->out : stdout;

  fprintf(out,
          "weft bench: backend %s, device 0: %s%s\n"
          "median of %d repeats after a warm-up; ratio = median / the "
          "baseline's median\n(same scenario, same unit, this run)\n\n",
          weft_backend_name(o->backend), o->device ? o->device : "?",
          o->quick ? " (quick sizes)" : "", c.repeat);
  print_header(out);

  uint64_t t0 = bench_now_ns();
  int failed = 0;
  if (o->nnames > 0) {
    for (int i = 0; i < o->nnames; i++) {
      const bench_scenario *sc = bench_find(o->names[i]);
      if (!sc) {
        fprintf(stderr, "weft bench: no scenario '%s'\n", o->names[i]);
        failed = 1;
        continue;
      }
      failed |= run_one(&c, sc, out, o->nnames > 1) != 0;
    }
  } else {
    for (size_t i = 0; i < NSCENARIOS; i++)
      failed |= run_one(&c, all_scenarios[i], out, NSCENARIOS > 1) != 0;
  }
  fprintf(out, "\n%zu rows in %.1f s", c.nrows,
          (double)(bench_now_ns() - t0) / 1e9);
  if (c.nfailures)
    fprintf(out, "; %zu scenario%s FAILED (see above)", c.nfailures,
            c.nfailures == 1 ? "" : "s");
  fprintf(out, "\n");

  if (o->json_path) {
    if (write_json(&c, o->json_path) != 0) {
      fprintf(stderr, "weft bench: cannot write %s: %s\n", o->json_path,
              errno ? strerror(errno) : "the writer failed");
      failed = 1;
    } else {
      fprintf(out, "JSON written to %s\n", o->json_path);
    }
  }

  if (o->plot_dir && write_charts(&c, o->plot_dir, out) != 0)
    failed = 1;

  for (size_t i = 0; i < c.nrows; i++) {
    free(c.rows[i].series);
    free(c.rows[i].variant);
    free(c.rows[i].unit);
    free(c.rows[i].notes);
  }
  free(c.rows);
  for (size_t i = 0; i < c.nfailures; i++)
    free(c.failures[i].message);
  free(c.failures);
  pthread_mutex_destroy(&c.lock);
  return failed ? 1 : 0;
}
