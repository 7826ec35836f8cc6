/* The report of an analysed trace: aligned text tables, or the same numbers
 * as JSON with a stable schema ("weft-trace-report/1", docs/TRACE.md). Names
 * come from the trace file, so text output replaces control characters and
 * JSON output escapes them. */
#include <stdio.h>
#include <string.h>

#include "analysis.h"
#include "json_write.h"
#include "trace_format.h"

#define NAME_WIDTH 60 /* bytes of a kernel or task name shown in text */

/* ---- text helpers ----------------------------------------------------------
 */

/* Writes s with control characters as '?', cut to at most max bytes at a
 * UTF-8 character boundary (with "..." when cut). */
static void put_name(FILE *f, const char *s, size_t max) {
  size_t n = strlen(s);
  size_t keep = n;
  if (n > max) {
    keep = max > 3 ? max - 3 : 0;
    while (keep > 0 && ((unsigned char)s[keep] & 0xC0) == 0x80)
      keep--;
  }
  for (size_t i = 0; i < keep; i++) {
    unsigned char c = (unsigned char)s[i];
    fputc(c < 0x20 || c == 0x7F ? '?' : c, f);
  }
  if (keep < n)
    fputs("...", f);
}

static const char *ms(char *buf, size_t size, double us) {
  snprintf(buf, size, "%.3f", us / 1000.0);
  return buf;
}

static const char *pct(char *buf, size_t size, double p) {
  if (p < 0)
    snprintf(buf, size, "-");
  else
    snprintf(buf, size, "%.1f", p);
  return buf;
}

static void lane_label(const trace_model *m, uint32_t lane, char *out,
                       size_t size) {
  const trace_gpu_lane *l = &m->gpu_lanes[lane];
  snprintf(out, size, "gpu %lld stream %lld", (long long)l->device,
           (long long)l->stream);
}

static void text_breakdown_rows(FILE *f, const trace_breakdown *b) {
  char x[32], y[32];
  fprintf(f, "  %-32s %10s %7s\n", "", "ms", "%");
  fprintf(f, "  %-32s %10s %7s\n", "compute (kernels)",
          ms(x, sizeof x, b->compute),
          pct(y, sizeof y, trace_pct(b->compute, b->span)));
  fprintf(f, "  %-32s %10s %7s\n", "non-compute (copies, memsets)",
          ms(x, sizeof x, b->non_compute),
          pct(y, sizeof y, trace_pct(b->non_compute, b->span)));
  fprintf(f, "  %-32s %10s %7s\n", "idle", ms(x, sizeof x, b->idle),
          pct(y, sizeof y, trace_pct(b->idle, b->span)));
  fprintf(f, "  %-32s %10s %7s\n", "busy (any GPU op)",
          ms(x, sizeof x, b->busy),
          pct(y, sizeof y, trace_pct(b->busy, b->span)));
}

/* The runtime's own delays (weft traces only; absent elsewhere). */
static void text_latency(FILE *f, const trace_model *m,
                         const trace_analysis *a) {
  if (!a->latency_slices)
    return;
  fprintf(f, "\nruntime latency (weft's own delays before task slices)\n");
  fprintf(f, "  %-26s %8s %10s %10s %10s %12s\n", "from -> to", "count",
          "median us", "p90 us", "max us", "total ms");
  char x[32];
  for (int k = TRACE_READY_SPAWN; k < TRACE_READY_NKINDS; k++) {
    const trace_latency_stats *l = &a->latency[k];
    if (!l->count)
      continue;
    const char *what = weft_trf_ready_what(k);
    fprintf(f, "  %-26s %8zu %10.3f %10.3f %10.3f %12s\n",
            what ? what : "other", l->count, l->median, l->p90, l->max,
            ms(x, sizeof x, l->total));
  }
  fprintf(f, "  slowest task %lld (", (long long)a->slowest_task);
  put_name(f, trace_model_str(m, a->slowest_name), 40);
  fprintf(f, "): life %.3f ms, of which runtime delays %.3f ms (%s %%)\n",
          a->slowest_life / 1000.0, a->slowest_delay / 1000.0,
          pct(x, sizeof x, trace_pct(a->slowest_delay, a->slowest_life)));
}

static void text_report(FILE *f, const trace_model *m, const trace_analysis *a,
                        const trace_report_opts *o) {
  char x[48], y[48], z[48], w[48];
  fprintf(f, "weft trace report: ");
  put_name(f, o->source ? o->source : "-", 200);
  if (o->range) {
    fprintf(f, "\n  inside range '");
    put_name(f, o->range, 200);
    fprintf(f,
            "': %zu range%s, %.3f ms together; every figure below is for "
            "that time only",
            o->ranges, o->ranges == 1 ? "" : "s", o->inside_us / 1e3);
  }
  fprintf(f,
          "\n  events: %zu (%zu complete, %zu metadata, %zu other "
          "phases ignored)\n",
          m->events, m->complete, m->metadata, m->ignored);
  fprintf(f,
          "  ops: kernels %zu, copies %zu, memsets %zu, API calls %zu, task "
          "slices %zu, waits %zu, ranges %zu, other %zu\n",
          m->count[TRACE_OP_KERNEL], m->count[TRACE_OP_MEMCPY],
          m->count[TRACE_OP_MEMSET], m->count[TRACE_OP_RUNTIME],
          m->count[TRACE_OP_TASK], m->count[TRACE_OP_WAIT],
          m->count[TRACE_OP_RANGE], m->count[TRACE_OP_OTHER]);
  fprintf(f, "  lanes: GPU streams %zu (devices %zu), CPU threads %zu\n",
          m->ngpu_lanes, a->ndevices, m->nthreads);
  if (m->dropped > 0)
    fprintf(f,
            "  incomplete: the tracer dropped %lld records for want of "
            "memory\n",
            (long long)m->dropped);

  if (a->gpu_ops == 0) {
    fprintf(f, "\nno GPU activity: the trace has no kernel, copy or memset "
               "(cat \"" WEFT_TRF_CAT_KERNEL "\", \"" WEFT_TRF_CAT_MEMCPY
               "\", \"" WEFT_TRF_CAT_MEMSET "\")\n");
  } else {
    const trace_breakdown *b = &a->all;
    fprintf(f, "\nGPU time over the span of GPU activity: %s ms\n",
            ms(x, sizeof x, b->span));
    text_breakdown_rows(f, b);
    fprintf(f,
            "\nkernel/copy overlap: %s ms (kernels running while a copy "
            "or memset ran)\n",
            ms(x, sizeof x, b->overlap));
    fprintf(f,
            "  %7s %% of busy time    (the overlap %% of HTA's kernel "
            "breakdown, seed 001)\n",
            pct(x, sizeof x, trace_pct(b->overlap, b->busy)));
    fprintf(f,
            "  %7s %% of memory time  (HTA's communication/computation "
            "overlap, for copies)\n",
            pct(x, sizeof x, trace_pct(b->overlap, b->memory)));

    if (a->ndevices > 1) {
      fprintf(f, "\nper device %14s %9s %9s %9s %9s %9s\n", "span ms",
              "compute%", "noncomp%", "idle%", "ovl%busy", "ovl%mem");
      for (size_t i = 0; i < a->ndevices; i++) {
        const trace_breakdown *d = &a->devices[i];
        char p1[16], p2[16], p3[16], p4[16], p5[16];
        fprintf(f, "  gpu %-6lld %14s %9s %9s %9s %9s %9s\n",
                (long long)d->device, ms(x, sizeof x, d->span),
                pct(p1, sizeof p1, trace_pct(d->compute, d->span)),
                pct(p2, sizeof p2, trace_pct(d->non_compute, d->span)),
                pct(p3, sizeof p3, trace_pct(d->idle, d->span)),
                pct(p4, sizeof p4, trace_pct(d->overlap, d->busy)),
                pct(p5, sizeof p5, trace_pct(d->overlap, d->memory)));
      }
    }

    fprintf(f, "\nidle time per stream (gaps inside each stream's span; "
               "waits as %% of its idle time, split as HTA does; q: ops "
               "launched, not yet started, as HTA counts; weft's own: late = "
               "gap time whose launch call returned after the stream ran dry, "
               "in-flight max = ops launched, not yet finished)\n");
    fprintf(f, "  %-24s %7s %10s %10s %6s %6s %6s %6s %6s %6s %6s %6s\n",
            "stream", "ops", "span ms", "idle ms", "idle%", "host", "kernel",
            "other", "q max", "q mean", "late", "flight");
    for (size_t i = 0; i < a->nstreams; i++) {
      const trace_stream_stats *s = &a->streams[i];
      if (s->ops == 0)
        continue;
      char label[64], p1[16], p2[16], p3[16], p4[16], p5[16];
      lane_label(m, s->lane, label, sizeof label);
      fprintf(f, "  %-24s %7zu %10s %10s %6s %6s %6s %6s %6zu %6.2f %6s %6zu\n",
              label, s->ops, ms(x, sizeof x, s->span), ms(y, sizeof y, s->idle),
              pct(p1, sizeof p1, trace_pct(s->idle, s->span)),
              pct(p2, sizeof p2, trace_pct(s->host_wait, s->idle)),
              pct(p3, sizeof p3, trace_pct(s->kernel_wait, s->idle)),
              pct(p4, sizeof p4, trace_pct(s->other_wait, s->idle)),
              s->queue_max, s->queue_mean,
              pct(p5, sizeof p5, trace_pct(s->late_launch, s->idle)),
              s->inflight_max);
    }
    fprintf(f,
            "  all streams: idle %s ms = host wait %s ms + kernel wait %s "
            "ms + other %s ms\n",
            ms(x, sizeof x, a->stream_idle), ms(y, sizeof y, a->host_wait),
            ms(z, sizeof z, a->kernel_wait), ms(w, sizeof w, a->other_wait));

    if (a->nkernels) {
      size_t top = a->nkernels < (size_t)o->top ? a->nkernels : (size_t)o->top;
      fprintf(f, "\ntop kernels by total time (%zu of %zu distinct)\n", top,
              a->nkernels);
      fprintf(f, "  %10s %8s %10s %10s %10s  %s\n", "total ms", "count",
              "mean us", "min us", "max us", "name");
      for (size_t i = 0; i < top; i++) {
        const trace_kernel_stats *k = &a->kernels[i];
        fprintf(f, "  %10s %8zu %10.3f %10.3f %10.3f  ",
                ms(x, sizeof x, k->total), k->count,
                k->total / (double)k->count, k->min, k->max);
        put_name(f, trace_model_str(m, k->name), NAME_WIDTH);
        fputc('\n', f);
      }
    }

    if (b->copies || b->memsets) {
      fprintf(f, "\ncopies and memsets\n");
      fprintf(f, "  %-7s %8s %14s %10s %9s %9s\n", "kind", "count", "bytes",
              "total ms", "GB/s", "pageable");
      for (int r = 1; r < TRACE_COPY_ROWS; r++) {
        const trace_copy_stats *c = &a->copies[r];
        if (!c->count)
          continue;
        char gbs[32];
        if (c->with_bytes && c->total_with_bytes > 0)
          snprintf(gbs, sizeof gbs, "%.2f",
                   c->bytes / (c->total_with_bytes * 1e3));
        else
          snprintf(gbs, sizeof gbs, "-");
        fprintf(
            f, "  %-7s %8zu %14.0f %10s %9s %9zu\n",
            r == TRACE_COPY_ROW_MEMSET ? "memset"
                                       : trace_copy_dir_name((trace_copy_dir)r),
            c->count, c->bytes, ms(x, sizeof x, c->total), gbs, c->pageable);
      }
    }

    const trace_launch_stats *l = &a->launch;
    if (l->matched) {
      fprintf(f,
              "\nlaunches: %zu of %zu GPU ops matched to their API call by "
              "correlation\n",
              l->matched, l->matched + l->unmatched);
      fprintf(f,
              "  launch delay (GPU start - end of the call, negatives as 0 "
              "as HTA): median %.3f us, p90 %.3f us, max %.3f us; %zu "
              "op%s started before the call returned\n",
              l->median, l->p90, l->max, l->early, l->early == 1 ? "" : "s");
    } else {
      fprintf(f, "\nlaunches: no GPU op matched an API call by correlation "
                 "(no launch delays; gaps count as \"other\")\n");
    }
    const trace_graph_stats *g = &a->graph;
    if (g->launches || g->ops)
      fprintf(f,
              "  graphs: %zu launches (cudaGraphLaunch) of %zu graph%s, "
              "%zu GPU ops replayed from them (%zu kernels); a replay's ops "
              "share its launch's correlation, so their launch delays count "
              "from that one call\n",
              g->launches, g->graphs, g->graphs == 1 ? "" : "s", g->ops,
              g->kernels);
  }

  if (a->ntasks) {
    size_t top = a->ntasks < (size_t)o->top ? a->ntasks : (size_t)o->top;
    fprintf(f, "\ntasks (%zu of %zu, by GPU time)\n", top, a->ntasks);
    fprintf(f, "  %8s  %-20s %7s %10s %10s %10s %10s %7s  %s\n", "task", "name",
            "slices", "run ms", "wait ms", "outside ms", "GPU ms", "GPU ops",
            "streams");
    for (size_t i = 0; i < top; i++) {
      const trace_task_stats *t = &a->tasks[i];
      const char *name = trace_model_str(m, t->name);
      fprintf(f, "  %8lld  ", (long long)t->task);
      put_name(f, name, 20);
      size_t shown = strlen(name) > 20 ? 20 : strlen(name);
      char v[32];
      fprintf(f, "%*s %7zu %10s %10s %10s %10s %7zu  ", (int)(20 - shown), "",
              t->slices, ms(x, sizeof x, t->run), ms(y, sizeof y, t->wait),
              ms(v, sizeof v, t->ext_wait), ms(z, sizeof z, t->gpu),
              t->gpu_ops);
      for (size_t k = 0; k < t->nstreams && k < 4; k++) {
        const trace_gpu_lane *ln =
            &m->gpu_lanes[a->task_streams[t->streams_at + k]];
        fprintf(f, "%s%lld/%lld", k ? " " : "", (long long)ln->device,
                (long long)ln->stream);
      }
      if (t->nstreams > 4)
        fprintf(f, " +%zu", t->nstreams - 4);
      if (t->nstreams == 0)
        fputc('-', f);
      fputc('\n', f);
    }
  }
  text_latency(f, m, a);
  if (m->checks)
    fprintf(f,
            "\nweft check: %zu finding%s (%zu race%s, %zu implicit "
            "synchronisation%s, which held the device %.3f ms in all); the "
            "lines are on the program's stderr and in the trace as instant "
            "events\n",
            m->checks, m->checks == 1 ? "" : "s", m->check_races,
            m->check_races == 1 ? "" : "s", m->check_syncs,
            m->check_syncs == 1 ? "" : "s", m->check_stall_us / 1e3);
}

/* ---- JSON
 * -------------------------------------------------------------------- */

/* A time in microseconds, to the nanosecond. */
static void json_us(FILE *f, const char *key, double v) {
  json_write_key(f, key);
  json_write_fixed(f, v, 3);
}

/* A percentage; negative ones mean "no meaning here" (trace_pct). */
static void json_pct(FILE *f, const char *key, double p) {
  json_write_key(f, key);
  if (p < 0)
    fputs("null", f);
  else
    json_write_fixed(f, p, 3);
}

static void json_breakdown(FILE *f, const trace_breakdown *b, int device) {
  fputc('{', f);
  if (device)
    fprintf(f, "\"device\": %lld, ", (long long)b->device);
  fprintf(f,
          "\"ops\": %zu, \"kernels\": %zu, \"copies\": %zu, \"memsets\": %zu, ",
          b->ops, b->kernels, b->copies, b->memsets);
  json_us(f, "start_us", b->start);
  fputs(", ", f);
  json_us(f, "end_us", b->end);
  fputs(", ", f);
  json_us(f, "span_us", b->span);
  fputs(", ", f);
  json_us(f, "compute_us", b->compute);
  fputs(", ", f);
  json_pct(f, "compute_pct", trace_pct(b->compute, b->span));
  fputs(", ", f);
  json_us(f, "non_compute_us", b->non_compute);
  fputs(", ", f);
  json_pct(f, "non_compute_pct", trace_pct(b->non_compute, b->span));
  fputs(", ", f);
  json_us(f, "idle_us", b->idle);
  fputs(", ", f);
  json_pct(f, "idle_pct", trace_pct(b->idle, b->span));
  fputs(", ", f);
  json_us(f, "busy_us", b->busy);
  fputs(", ", f);
  json_pct(f, "busy_pct", trace_pct(b->busy, b->span));
  fputs(", ", f);
  json_us(f, "memory_us", b->memory);
  fputs(", ", f);
  json_us(f, "overlap_us", b->overlap);
  fputs(", ", f);
  json_pct(f, "overlap_pct_of_busy", trace_pct(b->overlap, b->busy));
  fputs(", ", f);
  json_pct(f, "overlap_pct_of_memory", trace_pct(b->overlap, b->memory));
  fputc('}', f);
}

/* "runtime_latency": null without weft's ready delays in the trace. */
static void json_latency(FILE *f, const trace_model *m,
                         const trace_analysis *a) {
  fprintf(f, "  \"runtime_latency\": ");
  if (!a->latency_slices) {
    fprintf(f, "null\n");
    return;
  }
  fprintf(f, "{");
  int first = 1;
  for (int k = TRACE_READY_SPAWN; k < TRACE_READY_NKINDS; k++) {
    const trace_latency_stats *l = &a->latency[k];
    if (!l->count)
      continue;
    fprintf(f, "%s\"%s\": {\"count\": %zu, ", first ? "\n    " : ",\n    ",
            trace_ready_kind_name((trace_ready_kind)k), l->count);
    json_us(f, "median_us", l->median);
    fprintf(f, ", ");
    json_us(f, "p90_us", l->p90);
    fprintf(f, ", ");
    json_us(f, "max_us", l->max);
    fprintf(f, ", ");
    json_us(f, "total_us", l->total);
    fprintf(f, "}");
    first = 0;
  }
  fprintf(f, ",\n    \"slowest_task\": {\"task\": %lld, \"name\": ",
          (long long)a->slowest_task);
  json_write_string(f, trace_model_str(m, a->slowest_name));
  fprintf(f, ", ");
  json_us(f, "life_us", a->slowest_life);
  fprintf(f, ", ");
  json_us(f, "runtime_delay_us", a->slowest_delay);
  fprintf(f, "}}\n");
}

static void json_report(FILE *f, const trace_model *m, const trace_analysis *a,
                        const trace_report_opts *o) {
  fprintf(f, "{\n  \"schema\": \"weft-trace-report/1\",\n  \"source\": ");
  json_write_string(f, o->source ? o->source : "-");
  fprintf(f, ",\n  \"range\": ");
  if (o->range) {
    fprintf(f, "{\"name\": ");
    json_write_string(f, o->range);
    fprintf(f, ", \"ranges\": %zu, \"inside_us\": %.3f}", o->ranges,
            o->inside_us);
  } else {
    fprintf(f, "null");
  }
  fprintf(f,
          ",\n  \"events\": {\"total\": %zu, \"complete\": %zu, "
          "\"metadata\": %zu, \"ignored\": %zu},\n",
          m->events, m->complete, m->metadata, m->ignored);
  fprintf(f, "  \"ops\": {");
  for (int k = 0; k < TRACE_OP_NKINDS; k++)
    fprintf(f, "%s\"%s\": %zu", k ? ", " : "",
            trace_op_kind_name((trace_op_kind)k), m->count[k]);
  fprintf(f, "},\n  \"gpu_streams\": %zu,\n  \"cpu_threads\": %zu,\n",
          m->ngpu_lanes, m->nthreads);
  if (m->dropped >= 0)
    fprintf(f, "  \"dropped_records\": %lld,\n", (long long)m->dropped);
  else
    fprintf(f, "  \"dropped_records\": null,\n");

  fprintf(f, "  \"gpu\": ");
  if (a->gpu_ops)
    json_breakdown(f, &a->all, 0);
  else
    fputs("null", f);
  fprintf(f, ",\n  \"devices\": [");
  for (size_t i = 0; i < a->ndevices; i++) {
    fputs(i ? ",\n    " : "\n    ", f);
    json_breakdown(f, &a->devices[i], 1);
  }
  fprintf(f, "%s],\n", a->ndevices ? "\n  " : "");

  fprintf(f, "  \"idle\": {");
  json_us(f, "total_us", a->stream_idle);
  fputs(", ", f);
  json_us(f, "host_wait_us", a->host_wait);
  fputs(", ", f);
  json_us(f, "kernel_wait_us", a->kernel_wait);
  fputs(", ", f);
  json_us(f, "other_us", a->other_wait);
  fputs(", ", f);
  json_pct(f, "host_wait_pct", trace_pct(a->host_wait, a->stream_idle));
  fputs(", ", f);
  json_pct(f, "kernel_wait_pct", trace_pct(a->kernel_wait, a->stream_idle));
  fputs(", ", f);
  json_pct(f, "other_pct", trace_pct(a->other_wait, a->stream_idle));
  fprintf(f, "},\n  \"streams\": [");
  int first = 1;
  for (size_t i = 0; i < a->nstreams; i++) {
    const trace_stream_stats *s = &a->streams[i];
    if (s->ops == 0)
      continue;
    const trace_gpu_lane *l = &m->gpu_lanes[s->lane];
    fprintf(f, "%s{\"device\": %lld, \"stream\": %lld, \"ops\": %zu, ",
            first ? "\n    " : ",\n    ", (long long)l->device,
            (long long)l->stream, s->ops);
    first = 0;
    json_us(f, "start_us", s->start);
    fputs(", ", f);
    json_us(f, "span_us", s->span);
    fputs(", ", f);
    json_us(f, "busy_us", s->busy);
    fputs(", ", f);
    json_us(f, "idle_us", s->idle);
    fputs(", ", f);
    json_pct(f, "idle_pct", trace_pct(s->idle, s->span));
    fprintf(f, ", \"gaps\": %zu, ", s->gaps);
    json_us(f, "host_wait_us", s->host_wait);
    fputs(", ", f);
    json_us(f, "kernel_wait_us", s->kernel_wait);
    fputs(", ", f);
    json_us(f, "other_wait_us", s->other_wait);
    fputs(", ", f);
    json_us(f, "late_launch_us", s->late_launch);
    fprintf(f,
            ", \"queue_max\": %zu, \"queue_mean\": %.3f, \"in_flight_max\": "
            "%zu, \"in_flight_mean\": %.3f}",
            s->queue_max, s->queue_mean, s->inflight_max, s->inflight_mean);
  }
  fprintf(f, "%s],\n", first ? "" : "\n  ");

  size_t top = a->nkernels < (size_t)o->top ? a->nkernels : (size_t)o->top;
  fprintf(f, "  \"kernels\": {\"distinct\": %zu, \"top\": [", a->nkernels);
  for (size_t i = 0; i < top; i++) {
    const trace_kernel_stats *k = &a->kernels[i];
    fprintf(f, "%s{\"name\": ", i ? ",\n    " : "\n    ");
    json_write_string(f, trace_model_str(m, k->name));
    fprintf(f, ", \"count\": %zu, ", k->count);
    json_us(f, "total_us", k->total);
    fputs(", ", f);
    json_us(f, "mean_us", k->total / (double)k->count);
    fputs(", ", f);
    json_us(f, "min_us", k->min);
    fputs(", ", f);
    json_us(f, "max_us", k->max);
    fputc('}', f);
  }
  fprintf(f, "%s]},\n", top ? "\n  " : "");

  fprintf(f, "  \"copies\": [");
  for (int r = 1; r < TRACE_COPY_ROWS; r++) {
    const trace_copy_stats *c = &a->copies[r];
    fprintf(f,
            "%s{\"kind\": \"%s\", \"count\": %zu, \"bytes\": %.0f, "
            "\"ops_with_bytes\": %zu, ",
            r > 1 ? ",\n    " : "\n    ",
            r == TRACE_COPY_ROW_MEMSET ? "memset"
                                       : trace_copy_dir_name((trace_copy_dir)r),
            c->count, c->bytes, c->with_bytes);
    json_us(f, "total_us", c->total);
    if (c->with_bytes && c->total_with_bytes > 0)
      fprintf(f, ", \"gb_per_s\": %.3f",
              c->bytes / (c->total_with_bytes * 1e3));
    else
      fprintf(f, ", \"gb_per_s\": null");
    fprintf(f, ", \"pageable\": %zu}", c->pageable);
  }
  fprintf(f, "\n  ],\n");

  const trace_launch_stats *l = &a->launch;
  fprintf(f,
          "  \"launch\": {\"matched\": %zu, \"unmatched\": %zu, "
          "\"early\": %zu, \"delay_us\": ",
          l->matched, l->unmatched, l->early);
  if (l->matched)
    fprintf(f,
            "{\"median\": %.3f, \"p90\": %.3f, \"max\": %.3f, \"min\": %.3f}",
            l->median, l->p90, l->max, l->min);
  else
    fputs("null", f);
  fprintf(f, "},\n");
  fprintf(f,
          "  \"checks\": {\"findings\": %zu, \"races\": %zu, "
          "\"implicit_syncs\": %zu, \"stall_us\": %.3f},\n",
          m->checks, m->check_races, m->check_syncs, m->check_stall_us);
  fprintf(f,
          "  \"graphs\": {\"launches\": %zu, \"graphs\": %zu, \"ops\": %zu, "
          "\"kernels\": %zu},\n",
          a->graph.launches, a->graph.graphs, a->graph.ops, a->graph.kernels);

  top = a->ntasks < (size_t)o->top ? a->ntasks : (size_t)o->top;
  fprintf(f, "  \"tasks\": {\"count\": %zu, \"top\": [", a->ntasks);
  for (size_t i = 0; i < top; i++) {
    const trace_task_stats *t = &a->tasks[i];
    fprintf(f, "%s{\"task\": %lld, \"name\": ", i ? ",\n    " : "\n    ",
            (long long)t->task);
    json_write_string(f, trace_model_str(m, t->name));
    fprintf(f, ", \"slices\": %zu, ", t->slices);
    json_us(f, "run_us", t->run);
    fprintf(f, ", \"waits\": %zu, ", t->waits);
    json_us(f, "wait_us", t->wait);
    fprintf(f, ", ");
    json_us(f, "outside_wait_us", t->ext_wait);
    fprintf(f, ", \"gpu_ops\": %zu, ", t->gpu_ops);
    json_us(f, "gpu_us", t->gpu);
    fprintf(f, ", \"streams\": [");
    for (size_t k = 0; k < t->nstreams; k++) {
      const trace_gpu_lane *ln =
          &m->gpu_lanes[a->task_streams[t->streams_at + k]];
      fprintf(f, "%s{\"device\": %lld, \"stream\": %lld}", k ? ", " : "",
              (long long)ln->device, (long long)ln->stream);
    }
    fprintf(f, "]}");
  }
  fprintf(f, "%s]},\n", top ? "\n  " : "");
  json_latency(f, m, a);
  fprintf(f, "}\n");
}

int trace_report_print(FILE *f, const trace_model *m, const trace_analysis *a,
                       const trace_report_opts *opts) {
  trace_report_opts o = *opts;
  if (o.top <= 0)
    o.top = 10;
  if (o.json)
    json_report(f, m, a, &o);
  else
    text_report(f, m, a, &o);
  return ferror(f) ? -1 : 0;
}
