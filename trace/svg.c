/* The SVG timeline described in svg.h. */
#include "svg.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

/* Layout, in pixels. */
enum {
  LABEL_W = 180, /* lane labels on the left */
  RIGHT_PAD = 20,
  LANE_H = 18,
  LANE_GAP = 4,
  GROUP_H = 20, /* a device's or the CPU's heading */
  BAND_H = 12,  /* the overlap band */
  STRIP_H = 6,  /* API calls and waits inside a CPU lane */
  AXIS_H = 40,
  SMALL_PX = 4 /* narrower ops of one colour merge with neighbours */
};

/* Colours, one per kind drawn (Tableau 10). */
enum {
  C_KERNEL,
  C_HTOD,
  C_DTOH,
  C_DTOD,
  C_COPY_OTHER,
  C_MEMSET,
  C_RUNTIME,
  C_TASK,
  C_WAIT,
  C_OVERLAP,
  C_CAUSE, /* then one per cause of explain.h, in its order */
  NCOLORS = C_CAUSE + TRACE_NCAUSES
};

static const struct {
  const char *fill, *text, *legend;
} colors[NCOLORS] = {
    {"#4E79A7", "#fff", "kernel"},
    {"#59A14F", "#fff", "copy HtoD"},
    {"#E15759", "#fff", "copy DtoH"},
    {"#B07AA1", "#fff", "copy DtoD"},
    {"#76B7B2", "#000", "copy other"},
    {"#9C755F", "#fff", "memset"},
    {"#F28E2B", "#000", "API call"},
    {"#EDC948", "#000", "task"},
    {"#BAB0AC", "#000", "wait"},
    {"#C0392B", "#fff", "kernel ∩ copy"},
    /* the causes of lost time, each apart from the ops' colours above */
    {"#8E44AD", "#fff", "ordered on purpose"},
    {"#000000", "#fff", "implicit sync"},
    {"#1ABC9C", "#000", "one stream"},
    {"#E68FAC", "#000", "stream taken over"},
    {"#8DB600", "#000", "host too slow"},
    {"#2C3E50", "#fff", "GPU full"},
    {"#D35400", "#fff", "hardware queue"},
    {"#A1CAF1", "#000", "copy engines"},
    {"#F99379", "#000", "weft's own cost"},
};

static int op_color(const trace_op *op) {
  switch (op->kind) {
  case TRACE_OP_KERNEL:
    return C_KERNEL;
  case TRACE_OP_MEMCPY:
    return op->copy == TRACE_COPY_HTOD   ? C_HTOD
           : op->copy == TRACE_COPY_DTOH ? C_DTOH
           : op->copy == TRACE_COPY_DTOD ? C_DTOD
           : op->copy == TRACE_COPY_PTOP ? C_DTOD
                                         : C_COPY_OTHER;
  case TRACE_OP_MEMSET:
    return C_MEMSET;
  case TRACE_OP_RUNTIME:
    return C_RUNTIME;
  case TRACE_OP_TASK:
    return C_TASK;
  case TRACE_OP_WAIT:
    return C_WAIT;
  default:
    return -1;
  }
}

/* Writes s escaped for XML text and attributes, at most max bytes of it
 * (cut at a character boundary, with an ellipsis). Bytes that are not valid
 * UTF-8, and characters XML 1.0 forbids, become '?'. */
static void xml_text(FILE *f, const char *str, size_t max) {
  const unsigned char *s = (const unsigned char *)str;
  size_t n = strlen(str), used = 0;
  for (size_t i = 0; i < n;) {
    size_t k = trace_json_utf8_len(s + i, n - i);
    if (used + (k ? k : 1) > max) {
      fputs("…", f);
      return;
    }
    if (k == 0) {
      fputc('?', f);
      i++;
      used++;
      continue;
    }
    unsigned c = s[i];
    if (k == 1) {
      if (c == '&')
        fputs("&amp;", f);
      else if (c == '<')
        fputs("&lt;", f);
      else if (c == '>')
        fputs("&gt;", f);
      else if (c == '"')
        fputs("&quot;", f);
      else if (c == '\'')
        fputs("&#39;", f);
      else if (c < 0x20 || c == 0x7F)
        fputc('?', f);
      else
        fputc((int)c, f);
    } else if (k == 3 && c == 0xEF && s[i + 1] == 0xBF &&
               (s[i + 2] == 0xBE || s[i + 2] == 0xBF)) {
      fputc('?', f); /* U+FFFE, U+FFFF */
    } else {
      fwrite(s + i, 1, k, f);
    }
    i += k;
    used += k;
  }
}

typedef struct canvas {
  FILE *f;
  const trace_model *m;
  double t0, scale; /* x = plot_x + (t - t0) * scale */
  double plot_x, plot_w;
} canvas;

static double px(const canvas *c, double t) {
  return c->plot_x + (t - c->t0) * c->scale;
}

/* Builds one row of rectangles, merging what a pixel cannot separate. */
typedef struct row {
  canvas *c;
  double y, h;
  int has;
  double x0, x1;
  double t0, t1;
  double time[NCOLORS]; /* time per colour inside the pending rectangle */
  size_t nops;
  uint32_t name; /* the op's (or task's) name when nops == 1 */
  int color;     /* the first op's colour */
} row;

static void row_flush(row *r) {
  if (!r->has)
    return;
  r->has = 0;
  int best = r->color;
  for (int k = 0; k < NCOLORS; k++)
    if (r->time[k] > r->time[best])
      best = k;
  double w = r->x1 - r->x0;
  if (w < 1)
    w = 1;
  FILE *f = r->c->f;
  const char *name = trace_model_str(r->c->m, r->name);
  int kinds = 0;
  double total = 0;
  for (int k = 0; k < NCOLORS; k++) {
    kinds += r->time[k] > 0;
    total += r->time[k];
  }
  fputs("<g><title>", f);
  if (r->nops == 1) {
    xml_text(f, name, 300);
    fprintf(f, "%s%s, %.3f us at %.3f ms%s", *name ? " (" : "",
            colors[best].legend, r->t1 - r->t0, (r->t0 - r->c->t0) / 1000.0,
            *name ? ")" : "");
  } else {
    fprintf(f, "%zu ops from %.3f to %.3f ms", r->nops,
            (r->t0 - r->c->t0) / 1000.0, (r->t1 - r->c->t0) / 1000.0);
    for (int k = 0; k < NCOLORS && kinds > 1; k++)
      if (r->time[k] > 0)
        fprintf(f, ", %s %.0f%%", colors[k].legend, 100.0 * r->time[k] / total);
  }
  fputs("</title>", f);
  /* Merged ops that left part of their extent idle are drawn paler, as
   * busy as they were: half-transparent for a run of ops busy half the
   * time. */
  double extent = r->t1 - r->t0, busy = extent > 0 ? total / extent : 1;
  char opacity[48] = "";
  if (r->nops > 1 && busy < 0.95)
    snprintf(opacity, sizeof opacity, " fill-opacity=\"%.2f\"",
             busy > 0.2 ? busy : 0.2);
  if (kinds > 1 && total > 0) {
    /* Ops of several kinds merged: stack one band per kind, as high as its
     * share of the time, so a mix does not pass for its largest part. */
    double y = r->y;
    for (int k = 0; k < NCOLORS; k++) {
      if (!(r->time[k] > 0))
        continue;
      double h = r->h * r->time[k] / total;
      fprintf(f,
              "<rect x=\"%.1f\" y=\"%.2f\" width=\"%.1f\" "
              "height=\"%.2f\" fill=\"%s\"%s/>",
              r->x0, y, w, h, colors[k].fill, opacity);
      y += h;
    }
  } else {
    /* A white edge tells apart neighbours of one colour, where there is
     * room for it. */
    fprintf(f,
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
            "fill=\"%s\"%s%s/>",
            r->x0, r->y, w, r->h, colors[best].fill,
            w >= SMALL_PX ? " stroke=\"#fff\" stroke-width=\"0.5\"" : "",
            opacity);
  }
  fputs("</g>\n", f);
  /* A name inside the rectangle when it fits a few characters. */
  if (r->nops == 1 && *name && w >= 40 && r->h >= 12) {
    size_t chars = (size_t)((w - 6) / 6.0);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" class=\"in\" fill=\"%s\">",
            r->x0 + 3, r->y + r->h / 2 + 3.5, colors[best].text);
    xml_text(f, name, chars);
    fputs("</text>\n", f);
  }
}

static void row_add(row *r, const trace_op *op, int color, uint32_t name) {
  canvas *c = r->c;
  double x0 = px(c, op->ts), x1 = px(c, op->ts + op->dur);
  /* Merge when the gap to the pending rectangle is under a pixel and either
   * side is under a pixel wide (a pixel cannot show the difference), or
   * both have one colour and one is too narrow for a label or an edge (a
   * run of short kernels reads as one bar, not as a barcode). Other ops
   * keep their own rectangle, name and tooltip; each is at least a pixel
   * wide, so a row holds at most about one per pixel. */
  double w = x1 - x0, pw = r->x1 - r->x0;
  if (r->has && x0 - r->x1 < 1.0 &&
      (w < 1.0 || pw < 1.0 ||
       (color == r->color && (w < SMALL_PX || pw < SMALL_PX)))) {
    if (x1 > r->x1)
      r->x1 = x1;
    if (op->ts + op->dur > r->t1)
      r->t1 = op->ts + op->dur;
    r->time[color] += op->dur;
    r->nops++;
    return;
  }
  row_flush(r);
  r->has = 1;
  r->x0 = x0;
  r->x1 = x1;
  r->t0 = op->ts;
  r->t1 = op->ts + op->dur;
  memset(r->time, 0, sizeof r->time);
  r->time[color] = op->dur;
  r->nops = 1;
  r->name = name;
  r->color = color;
}

/* Indices of the ops of each lane (GPU lanes, or threads), in time order. */
typedef struct lanes {
  uint32_t *at; /* n + 1 offsets */
  uint32_t *ops;
} lanes;

static int group_ops(const trace_model *m, int gpu, size_t n, lanes *out) {
  out->at = calloc(n + 2, sizeof *out->at);
  out->ops = malloc((m->nops + 1) * sizeof *out->ops);
  uint32_t *fill = malloc((n + 1) * sizeof *fill);
  if (!out->at || !out->ops || !fill) {
    free(fill);
    return -1;
  }
  for (size_t i = 0; i < m->nops; i++)
    if (trace_op_is_gpu(&m->ops[i]) == gpu && op_color(&m->ops[i]) >= 0)
      out->at[m->ops[i].lane + 1]++;
  for (size_t l = 0; l < n; l++)
    out->at[l + 1] += out->at[l];
  memcpy(fill, out->at, n * sizeof *fill);
  for (size_t i = 0; i < m->nops; i++)
    if (trace_op_is_gpu(&m->ops[i]) == gpu && op_color(&m->ops[i]) >= 0)
      out->ops[fill[m->ops[i].lane]++] = (uint32_t)i;
  free(fill);
  return 0;
}

static void lanes_free(lanes *l) {
  free(l->at);
  free(l->ops);
}

static void lane_label(canvas *c, double y, const char *text, int bold) {
  fprintf(c->f, "<text x=\"8\" y=\"%.1f\" class=\"%s\">", y,
          bold ? "group" : "lane");
  xml_text(c->f, text, 30);
  fputs("</text>\n", c->f);
}

/* A tick step of 1, 2 or 5 times a power of ten giving about 10 ticks. */
static double tick_step(double span_ms) {
  double raw = span_ms / 10;
  double mag = pow(10, floor(log10(raw)));
  double norm = raw / mag;
  return (norm < 1.5 ? 1 : norm < 3.5 ? 2 : norm < 7.5 ? 5 : 10) * mag;
}

static void axis(canvas *c, double span_us, double top, double bottom) {
  FILE *f = c->f;
  double span_ms = span_us / 1000.0;
  double step = tick_step(span_ms);
  int decimals = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
  if (decimals > 9)
    decimals = 9;
  fprintf(f,
          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
          "stroke=\"#333\"/>\n",
          c->plot_x, bottom, c->plot_x + c->plot_w, bottom);
  for (int i = 0; i <= 1000; i++) {
    double t = step * i;
    if (t > span_ms * (1 + 1e-9))
      break;
    double x = c->plot_x + t * 1000.0 * c->scale;
    fprintf(f,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
            "class=\"grid\"/>\n",
            x, top, x, bottom);
    fprintf(f,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
            "stroke=\"#333\"/>\n",
            x, bottom, x, bottom + 5);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" class=\"tick\">%.*f</text>\n", x,
            bottom + 17, decimals, t);
  }
  fprintf(f,
          "<text x=\"%.1f\" y=\"%.1f\" class=\"end\">ms from the first "
          "op</text>\n",
          c->plot_x + c->plot_w, bottom + 33);
}

/* ---- the picture --------------------------------------------------------- */

/* Where everything goes, worked out before anything is written. */
typedef struct layout {
  int width;
  double height;
  double legend_x[NCOLORS], legend_y[NCOLORS];
  double top;     /* the overlap band */
  double lanes_y; /* the first heading */
  int ncolors;    /* legend entries: the causes too when explained */
  size_t drawn, hidden, groups, cpu_lanes;
} layout;

/* The time range of every op drawn; 0 when there is none. */
static int time_range(const trace_model *m, double *t0, double *t1) {
  int any = 0;
  *t0 = *t1 = 0;
  for (size_t i = 0; i < m->nops; i++) {
    const trace_op *op = &m->ops[i];
    if (op_color(op) < 0)
      continue;
    if (!any || op->ts < *t0)
      *t0 = op->ts;
    if (!any || op->ts + op->dur > *t1)
      *t1 = op->ts + op->dur;
    any = 1;
  }
  return any;
}

/* Which lanes are drawn (those with ops, up to the limit), and under how
 * many headings: one per device, and one for the CPU threads. */
static void count_lanes(const trace_model *m, const lanes *gl, const lanes *tl,
                        layout *lo) {
  for (size_t l = 0; l < m->ngpu_lanes; l++) {
    if (gl->at[l + 1] == gl->at[l])
      continue;
    if (lo->drawn >= TRACE_SVG_MAX_LANES) {
      lo->hidden++;
      continue;
    }
    lo->drawn++;
    if (l == 0 || m->gpu_lanes[l].device != m->gpu_lanes[l - 1].device)
      lo->groups++;
  }
  for (size_t t = 0; t < m->nthreads; t++) {
    if (tl->at[t + 1] == tl->at[t])
      continue;
    if (lo->drawn >= TRACE_SVG_MAX_LANES) {
      lo->hidden++;
      continue;
    }
    lo->drawn++;
    lo->cpu_lanes++;
  }
  lo->groups += lo->cpu_lanes > 0;
}

/* The legend wraps on narrow pictures; the band and the lanes go below it. */
static void place(layout *lo) {
  double lx = 8, ly = 50;
  for (int k = 0; k < lo->ncolors; k++) {
    double w = 16 + 6.5 * (double)strlen(colors[k].legend) + 14;
    if (lx + w > lo->width && lx > 8) {
      lx = 8;
      ly += 18;
    }
    lo->legend_x[k] = lx;
    lo->legend_y[k] = ly;
    lx += w;
  }
  lo->top = lo->legend_y[lo->ncolors - 1] + 30;
  lo->lanes_y = lo->top + BAND_H + 10;
  if (lo->ncolors > C_CAUSE) /* the band of lost time below */
    lo->lanes_y += BAND_H + 6;
  lo->height = lo->lanes_y + lo->groups * GROUP_H +
               (double)lo->drawn * (LANE_H + LANE_GAP) + AXIS_H + 10 +
               (lo->hidden ? 16 : 0);
}

static void write_head(FILE *f, const layout *lo) {
  fprintf(f,
          "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
          "height=\"%.0f\" viewBox=\"0 0 %d %.0f\">\n"
          "<style>text{font-family:sans-serif;font-size:11px;fill:#222}"
          ".title{font-size:14px;font-weight:bold}.group{font-weight:bold}"
          ".in{font-size:10px}.tick{text-anchor:middle;font-size:10px}"
          ".end{text-anchor:end}"
          ".grid{stroke:#ddd;stroke-width:1}</style>\n"
          "<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n",
          lo->width, lo->height, lo->width, lo->height);
}

/* The title, and a line with the breakdown and both overlap figures. */
static void write_title(FILE *f, const trace_analysis *a,
                        const trace_svg_opts *opts) {
  fprintf(f, "<text x=\"8\" y=\"20\" class=\"title\">weft trace");
  if (opts && opts->title) {
    fputs(": ", f);
    xml_text(f, opts->title, 120);
  }
  fputs("</text>\n<text x=\"8\" y=\"38\">", f);
  const trace_breakdown *b = &a->all;
  if (a->gpu_ops) {
    double pb = trace_pct(b->overlap, b->busy);
    double pm = trace_pct(b->overlap, b->memory);
    fprintf(f,
            "GPU span %.3f ms: compute %.1f%%, non-compute %.1f%%, idle "
            "%.1f%%. Kernel ∩ copy overlap %.3f ms",
            b->span / 1000.0, fmax(trace_pct(b->compute, b->span), 0),
            fmax(trace_pct(b->non_compute, b->span), 0),
            fmax(trace_pct(b->idle, b->span), 0), b->overlap / 1000.0);
    if (pb >= 0)
      fprintf(f, " = %.1f%% of busy", pb);
    if (pm >= 0)
      fprintf(f, ", %.1f%% of memory time", pm);
    fputs(".", f);
  } else {
    fputs("No GPU activity in this trace.", f);
  }
  fputs("</text>\n", f);
}

static void write_legend(FILE *f, const layout *lo) {
  for (int k = 0; k < lo->ncolors; k++)
    fprintf(f,
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" "
            "fill=\"%s\"/><text x=\"%.1f\" y=\"%.1f\">%s</text>\n",
            lo->legend_x[k], lo->legend_y[k], colors[k].fill,
            lo->legend_x[k] + 16, lo->legend_y[k] + 10, colors[k].legend);
}

/* The band shading K ∩ M, the time behind the overlap percentages. */
static void draw_overlap(canvas *c, const trace_analysis *a, double top) {
  fprintf(c->f, "<text x=\"8\" y=\"%.1f\">kernel ∩ copy</text>\n", top + 10);
  fprintf(c->f,
          "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" "
          "fill=\"#f4f4f4\"/>\n",
          c->plot_x, top, c->plot_w, BAND_H);
  row r = {.c = c, .y = top, .h = BAND_H};
  for (size_t i = 0; i < a->noverlap; i++) {
    trace_op fake = {.ts = a->overlap[i].start,
                     .dur = a->overlap[i].end - a->overlap[i].start};
    row_add(&r, &fake, C_OVERLAP, 0);
  }
  row_flush(&r);
}

/* The band of lost time, by cause (`weft trace explain`). */
static void draw_lost(canvas *c, const trace_explanation *e, double top) {
  fprintf(c->f, "<text x=\"8\" y=\"%.1f\">lost: why</text>\n", top + 10);
  fprintf(c->f,
          "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" "
          "fill=\"#f4f4f4\"/>\n",
          c->plot_x, top, c->plot_w, BAND_H);
  /* Sorted by cause: one row per cause, each drawn over the band. */
  for (size_t i = 0; i < e->nlost;) {
    row r = {.c = c, .y = top, .h = BAND_H};
    uint8_t cause = e->lost_at[i].cause;
    for (; i < e->nlost && e->lost_at[i].cause == cause; i++) {
      trace_op fake = {.ts = e->lost_at[i].start,
                       .dur = e->lost_at[i].end - e->lost_at[i].start};
      row_add(&r, &fake, C_CAUSE + cause, 0);
    }
    row_flush(&r);
  }
}

/* GPU lanes from y on, under a heading per device, while budget lasts.
 * Returns the y below them. */
static double draw_gpu_lanes(canvas *c, const lanes *gl, double y,
                             size_t *budget) {
  const trace_model *m = c->m;
  char label[128];
  int64_t heading = 0;
  int headed = 0;
  for (size_t l = 0; l < m->ngpu_lanes && *budget; l++) {
    if (gl->at[l + 1] == gl->at[l])
      continue;
    (*budget)--;
    const trace_gpu_lane *ln = &m->gpu_lanes[l];
    if (!headed || ln->device != heading) {
      snprintf(label, sizeof label, "GPU %lld", (long long)ln->device);
      lane_label(c, y + 14, label, 1);
      y += GROUP_H;
      heading = ln->device;
      headed = 1;
    }
    snprintf(label, sizeof label, "stream %lld", (long long)ln->stream);
    lane_label(c, y + 13, label, 0);
    row r = {.c = c, .y = y, .h = LANE_H};
    for (uint32_t k = gl->at[l]; k < gl->at[l + 1]; k++) {
      const trace_op *op = &m->ops[gl->ops[k]];
      row_add(&r, op, op_color(op), op->name);
    }
    row_flush(&r);
    y += LANE_H + LANE_GAP;
  }
  return y;
}

/* One CPU thread's lane at y: task slices fill it, API calls and waits are
 * strips at its top and bottom. */
static void draw_cpu_lane(canvas *c, const lanes *tl, size_t t, double y) {
  const trace_model *m = c->m;
  char label[128];
  trace_thread_label(m, &m->threads[t], label, sizeof label);
  lane_label(c, y + 13, label, 0);
  fprintf(c->f,
          "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" "
          "fill=\"#fafafa\"/>\n",
          c->plot_x, y, c->plot_w, LANE_H);
  row tasks = {.c = c, .y = y, .h = LANE_H};
  row calls = {.c = c, .y = y, .h = STRIP_H};
  row waits = {.c = c, .y = y + LANE_H - STRIP_H, .h = STRIP_H};
  /* Tasks first so the strips are drawn over them. */
  for (uint32_t k = tl->at[t]; k < tl->at[t + 1]; k++) {
    const trace_op *op = &m->ops[tl->ops[k]];
    if (op->kind == TRACE_OP_TASK)
      row_add(&tasks, op, C_TASK, op->task_name ? op->task_name : op->name);
  }
  row_flush(&tasks);
  for (uint32_t k = tl->at[t]; k < tl->at[t + 1]; k++) {
    const trace_op *op = &m->ops[tl->ops[k]];
    if (op->kind == TRACE_OP_RUNTIME)
      row_add(&calls, op, C_RUNTIME, op->name);
    else if (op->kind == TRACE_OP_WAIT)
      row_add(&waits, op, C_WAIT, op->name);
  }
  row_flush(&calls);
  row_flush(&waits);
}

/* The CPU threads from y on, under one heading, while budget lasts.
 * Returns the y below them. */
static double draw_cpu_lanes(canvas *c, const lanes *tl, size_t cpu_lanes,
                             double y, size_t *budget) {
  if (cpu_lanes && *budget) {
    lane_label(c, y + 14, "CPU threads", 1);
    y += GROUP_H;
  }
  for (size_t t = 0; t < c->m->nthreads && *budget; t++) {
    if (tl->at[t + 1] == tl->at[t])
      continue;
    (*budget)--;
    draw_cpu_lane(c, tl, t, y);
    y += LANE_H + LANE_GAP;
  }
  return y;
}

/* Everything below the legend: the axis and grid, the band, the lanes. */
static void draw_body(canvas *c, const trace_analysis *a,
                      const trace_explanation *e, const lanes *gl,
                      const lanes *tl, const layout *lo, double span) {
  /* The time axis and its grid first, so the ops are drawn over the grid. */
  double lanes_bottom = lo->lanes_y + (double)lo->groups * GROUP_H +
                        (double)lo->drawn * (LANE_H + LANE_GAP) +
                        (lo->hidden ? 16 : 0);
  axis(c, span, lo->top, lanes_bottom + 4);
  draw_overlap(c, a, lo->top);
  if (e)
    draw_lost(c, e, lo->top + BAND_H + 6);
  size_t budget = TRACE_SVG_MAX_LANES;
  double y = draw_gpu_lanes(c, gl, lo->lanes_y, &budget);
  y = draw_cpu_lanes(c, tl, lo->cpu_lanes, y, &budget);
  if (lo->hidden)
    fprintf(c->f, "<text x=\"8\" y=\"%.1f\">%zu more lanes not drawn</text>\n",
            y + 10, lo->hidden);
}

int trace_svg_write(FILE *f, const trace_model *m, const trace_analysis *a,
                    const trace_svg_opts *opts) {
  layout lo = {.width =
                   opts && opts->width ? opts->width : TRACE_SVG_DEFAULT_WIDTH};
  if (lo.width < TRACE_SVG_MIN_WIDTH)
    lo.width = TRACE_SVG_MIN_WIDTH;
  if (lo.width > TRACE_SVG_MAX_WIDTH)
    lo.width = TRACE_SVG_MAX_WIDTH;

  lanes gl = {0}, tl = {0};
  if (group_ops(m, 1, m->ngpu_lanes, &gl) ||
      group_ops(m, 0, m->nthreads, &tl)) {
    lanes_free(&gl);
    lanes_free(&tl);
    return -1;
  }
  double t0, t1;
  int any = time_range(m, &t0, &t1);
  double span = t1 - t0;
  if (!(span > 0))
    span = 1; /* a single instant: any scale will do */
  count_lanes(m, &gl, &tl, &lo);
  const trace_explanation *ex = opts ? opts->explain : NULL;
  lo.ncolors = ex ? NCOLORS : C_CAUSE;
  place(&lo);

  canvas c = {.f = f, .m = m, .t0 = t0};
  c.plot_x = LABEL_W;
  c.plot_w = lo.width - LABEL_W - RIGHT_PAD;
  c.scale = c.plot_w / span;

  write_head(f, &lo);
  write_title(f, a, opts);
  write_legend(f, &lo);
  if (any)
    draw_body(&c, a, ex, &gl, &tl, &lo, span);
  else
    fprintf(f, "<text x=\"8\" y=\"%.0f\">No operations to draw.</text>\n",
            lo.top + 20);
  fputs("</svg>\n", f);
  lanes_free(&gl);
  lanes_free(&tl);
  return ferror(f) ? -1 : 0;
}
