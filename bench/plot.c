#define _POSIX_C_SOURCE 200809L /* out_file.h */
/* SVG charts of benchmark rows (plot.h). */
#include "plot.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "out_file.h"

/* Okabe and Ito's palette: tells series apart with any colour vision. */
static const char *const palette[] = {"#0072B2", "#E69F00", "#009E73",
                                      "#D55E00", "#CC79A7", "#56B4E9",
                                      "#000000", "#F0E442"};
#define NCOLORS (sizeof palette / sizeof palette[0])

enum { TOP = 48, LEFT = 86 };

typedef struct axis {
  double lo, hi; /* the range drawn */
  int log;
  int px0, px1; /* lo and hi map here (px1 < px0 on y) */
} axis;

static double to_px(const axis *a, double v) {
  double f = a->log ? (log10(v) - log10(a->lo)) / (log10(a->hi) - log10(a->lo))
                    : (v - a->lo) / (a->hi - a->lo);
  return a->px0 + f * (a->px1 - a->px0);
}

/* 1, 2 or 5 times a power of ten, at least v. */
static double nice_step(double v) {
  double p = pow(10.0, floor(log10(v)));
  double m = v / p;
  return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

static void xml_text(FILE *f, const char *s) {
  for (; *s; s++) {
    switch (*s) {
    case '&':
      fputs("&amp;", f);
      break;
    case '<':
      fputs("&lt;", f);
      break;
    case '>':
      fputs("&gt;", f);
      break;
    case '"':
      fputs("&quot;", f);
      break;
    default:
      fputc(*s, f);
    }
  }
}

/* Tick labels: three significant digits, k/M/G for large values. */
static void fmt_tick(char *buf, size_t len, double v) {
  double a = fabs(v);
  if (a >= 1e9)
    snprintf(buf, len, "%.3gG", v / 1e9);
  else if (a >= 1e6)
    snprintf(buf, len, "%.3gM", v / 1e6);
  else if (a >= 1e4)
    snprintf(buf, len, "%.3gk", v / 1e3);
  else
    snprintf(buf, len, "%.4g", v);
}

/* "us" is what the table prints; the chart can say it properly. */
static const char *unit_label(const char *unit) {
  return strcmp(unit, "us") == 0 ? "\xc2\xb5s" : unit;
}

/* Ticks of a linear axis from lo (0 or below the data) up to a nice top
 * at least hi; sets a->lo and a->hi. Returns the step. A percentage
 * reaches 100 at least, so that 80 % busy does not look full. */
static double linear_range(axis *a, double lo, double hi, const char *unit) {
  if (unit[0] == '%' && hi < 100)
    hi = 100;
  if (hi <= lo)
    hi = lo + (lo != 0 ? fabs(lo) : 1);
  double step = nice_step((hi - lo) / 5);
  a->lo = floor(lo / step) * step;
  a->hi = ceil(hi / step) * step;
  return step;
}

/* A log axis from the decade at or below lo to the one at or above hi. */
static void log_range(axis *a, double lo, double hi) {
  a->lo = pow(10.0, floor(log10(lo)));
  a->hi = pow(10.0, ceil(log10(hi)));
  if (a->hi <= a->lo)
    a->hi = a->lo * 10;
}

/* The y axis: its line, ticks, grid and labels. */
static void draw_y(FILE *f, const axis *a, double step, int x0, int x1,
                   const char *unit) {
  char buf[32];
  if (a->log) {
    /* Two decades or fewer: 2 and 5 are labelled too. */
    int few = a->hi / a->lo <= 100.0001;
    for (double d = a->lo; d <= a->hi * 1.0001; d *= 10) {
      for (int m = 1; m < 10; m++) {
        double v = d * m;
        if (v > a->hi * 1.0001)
          break;
        double y = to_px(a, v);
        if (m == 1 || (few && (m == 2 || m == 5))) {
          fprintf(f,
                  "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" "
                  "stroke=\"#ddd\"/>\n",
                  x0, y, x1, y);
          fmt_tick(buf, sizeof buf, v);
          fprintf(f,
                  "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\" "
                  "dominant-baseline=\"middle\">%s</text>\n",
                  x0 - 6, y, buf);
        } else {
          fprintf(f,
                  "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" "
                  "stroke=\"#999\"/>\n",
                  x0 - 3, y, x0, y);
        }
      }
    }
  } else {
    for (double v = a->lo; v <= a->hi + step * 1e-6; v += step) {
      double y = to_px(a, v);
      fprintf(f,
              "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" "
              "stroke=\"#ddd\"/>\n",
              x0, y, x1, y);
      fmt_tick(buf, sizeof buf, fabs(v) < step * 1e-6 ? 0 : v);
      fprintf(f,
              "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\" "
              "dominant-baseline=\"middle\">%s</text>\n",
              x0 - 6, y, buf);
    }
  }
  fprintf(f,
          "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>\n",
          x0, a->px0, x0, a->px1);
  fprintf(f,
          "<text transform=\"translate(%d %d) rotate(-90)\" "
          "text-anchor=\"middle\">",
          18, (a->px0 + a->px1) / 2);
  xml_text(f, unit_label(unit));
  fputs("</text>\n", f);
}

static void whisker(FILE *f, double x, double y0, double y1,
                    const char *color) {
  if (fabs(y0 - y1) < 1)
    return;
  fprintf(f,
          "<path d=\"M%.1f %.1fV%.1fM%.1f %.1fh6M%.1f %.1fh6\" "
          "stroke=\"%s\" fill=\"none\"/>\n",
          x, y0, y1, x - 3, y0, x - 3, y1, color);
}

static void header(FILE *f, int w, int h, const char *title) {
  fprintf(f,
          "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
          "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" "
          "width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
          "font-family=\"sans-serif\" font-size=\"12\">\n"
          "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n"
          "<text x=\"%d\" y=\"26\" font-size=\"15\" font-weight=\"bold\" "
          "text-anchor=\"middle\">",
          w, h, w, h, w, h, w / 2);
  xml_text(f, title);
  fputs("</text>\n", f);
}

/* The points of one chart, in report order. */
typedef struct chart_pts {
  const bench_plot_point **p;
  size_t n;
} chart_pts;

static int cmp_x(const void *a, const void *b) {
  const bench_plot_point *p = *(const bench_plot_point *const *)a,
                         *q = *(const bench_plot_point *const *)b;
  return (p->x > q->x) - (p->x < q->x);
}

static void lines_chart(FILE *f, const chart_pts *c) {
  const bench_chart *ch = c->p[0]->chart;
  enum { W = 800, H = 460, RIGHT = 230, BOTTOM = 58 };
  header(f, W, H, ch->title);
  axis ax = {.log = (ch->flags & BENCH_CHART_LOG_X) != 0,
             .px0 = LEFT,
             .px1 = W - RIGHT};
  axis ay = {.log = (ch->flags & BENCH_CHART_LOG_Y) != 0,
             .px0 = H - BOTTOM,
             .px1 = TOP};
  double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
  for (size_t i = 0; i < c->n; i++) {
    const bench_plot_point *p = c->p[i];
    xlo = fmin(xlo, p->x);
    xhi = fmax(xhi, p->x);
    ylo = fmin(ylo, p->lo);
    yhi = fmax(yhi, p->hi);
  }
  double ystep = 0;
  if (ay.log)
    log_range(&ay, ylo > 0 ? ylo : 1, yhi > 0 ? yhi : 10);
  else
    ystep = linear_range(&ay, ylo < 0 ? ylo : 0, yhi, c->p[0]->unit);
  /* x: the data's own values are the ticks (batch sizes, task counts),
   * with a margin so the end points do not sit on the axes. */
  if (ax.log) {
    double lo = xlo > 0 ? xlo : 1, hi = xhi > lo ? xhi : lo * 2;
    double m = pow(hi / lo, 0.04);
    ax.lo = lo / m;
    ax.hi = hi * m;
  } else {
    double m = xhi > xlo ? (xhi - xlo) * 0.04 : 1;
    ax.lo = xlo - m;
    ax.hi = xhi + m;
  }
  draw_y(f, &ay, ystep, ax.px0, ax.px1, c->p[0]->unit);
  fprintf(f,
          "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>\n",
          ax.px0, ay.px0, ax.px1, ay.px0);
  char buf[32];
  double last = -INFINITY;
  const bench_plot_point **byx = malloc(c->n * sizeof *byx);
  if (byx) {
    memcpy(byx, c->p, c->n * sizeof *byx);
    qsort(byx, c->n, sizeof *byx, cmp_x);
    for (size_t i = 0; i < c->n; i++) {
      double x = to_px(&ax, byx[i]->x);
      if (x - last < 24) /* a tick per distinct x, if they fit */
        continue;
      last = x;
      fmt_tick(buf, sizeof buf, byx[i]->x);
      fprintf(f,
              "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" "
              "stroke=\"#333\"/>\n<text x=\"%.1f\" y=\"%d\" "
              "text-anchor=\"middle\">%s</text>\n",
              x, ay.px0, x, ay.px0 + 4, x, ay.px0 + 18, buf);
    }
  }
  fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">",
          (ax.px0 + ax.px1) / 2, H - 16);
  xml_text(f, ch->x_label);
  fputs("</text>\n", f);
  /* One line per series, in the order series first appear. */
  int nseries = 0;
  for (size_t i = 0; i < c->n; i++) {
    int first = 1;
    for (size_t j = 0; j < i && first; j++)
      first = strcmp(c->p[j]->series, c->p[i]->series) != 0;
    if (!first || !byx)
      continue;
    const char *color = palette[nseries % NCOLORS];
    fprintf(f,
            "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" "
            "points=\"",
            color);
    for (size_t k = 0; k < c->n; k++)
      if (strcmp(byx[k]->series, c->p[i]->series) == 0)
        fprintf(f, "%.1f,%.1f ", to_px(&ax, byx[k]->x), to_px(&ay, byx[k]->y));
    fputs("\"/>\n", f);
    for (size_t k = 0; k < c->n; k++) {
      const bench_plot_point *p = byx[k];
      if (strcmp(p->series, c->p[i]->series) != 0)
        continue;
      double x = to_px(&ax, p->x);
      whisker(f, x, to_px(&ay, p->lo), to_px(&ay, p->hi), color);
      fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"/>\n", x,
              to_px(&ay, p->y), color);
    }
    int ly = TOP + 10 + 22 * nseries;
    fprintf(f,
            "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" "
            "stroke-width=\"2\"/><circle cx=\"%d\" cy=\"%d\" r=\"3.5\" "
            "fill=\"%s\"/>\n<text x=\"%d\" y=\"%d\" "
            "dominant-baseline=\"middle\">",
            W - RIGHT + 16, ly, W - RIGHT + 40, ly, color, W - RIGHT + 28, ly,
            color, W - RIGHT + 48, ly);
    xml_text(f, c->p[i]->series);
    fputs("</text>\n", f);
    nseries++;
  }
  free(byx);
  fprintf(f,
          "<text x=\"%d\" y=\"%d\" fill=\"#666\" font-size=\"11\">whiskers: "
          "min-max of the repeats</text>\n",
          W - RIGHT + 16, TOP + 14 + 22 * nseries);
}

static void bars_chart(FILE *f, const chart_pts *c) {
  const bench_chart *ch = c->p[0]->chart;
  enum { W = 800, H = 560, RIGHT = 40, BOTTOM = 210 };
  header(f, W, H, ch->title);
  axis ay = {.log = (ch->flags & BENCH_CHART_LOG_Y) != 0,
             .px0 = H - BOTTOM,
             .px1 = TOP};
  double ylo = INFINITY, yhi = -INFINITY;
  size_t nbars = 0;
  for (size_t i = 0; i < c->n; i++) {
    ylo = fmin(ylo, c->p[i]->lo);
    yhi = fmax(yhi, c->p[i]->hi);
    nbars += !c->p[i]->ref;
  }
  double ystep = 0;
  if (ay.log)
    log_range(&ay, ylo > 0 ? ylo : 1, yhi > 0 ? yhi : 10);
  else
    ystep = linear_range(&ay, ylo < 0 ? ylo : 0, yhi, c->p[0]->unit);
  /* Room on the left for the first bar's slanted label. */
  int x0 = LEFT + 70, x1 = W - RIGHT;
  draw_y(f, &ay, ystep, x0, x1, c->p[0]->unit);
  fprintf(f,
          "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>\n",
          x0, ay.px0, x1, ay.px0);
  double slot = nbars ? (double)(x1 - x0) / (double)nbars : 0;
  double base = ay.log ? ay.px0 : to_px(&ay, ay.lo > 0 ? ay.lo : 0);
  size_t k = 0;
  char buf[32];
  for (size_t i = 0; i < c->n; i++) {
    const bench_plot_point *p = c->p[i];
    if (p->ref)
      continue;
    const char *color = palette[k % NCOLORS];
    double cx = x0 + slot * ((double)k + 0.5), y = to_px(&ay, p->y);
    double bw = slot * 0.64;
    fprintf(f,
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
            "fill=\"%s\" fill-opacity=\"0.85\"/>\n",
            cx - bw / 2, fmin(y, base), bw, fabs(base - y), color);
    whisker(f, cx, to_px(&ay, p->lo), to_px(&ay, p->hi), "#333");
    fmt_tick(buf, sizeof buf, p->y);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
            cx, fmin(y, to_px(&ay, p->hi)) - 6, buf);
    fprintf(f,
            "<text transform=\"translate(%.1f %d) rotate(-35)\" "
            "text-anchor=\"end\">",
            cx + 4, ay.px0 + 14);
    xml_text(f, p->series);
    fputs("</text>\n", f);
    k++;
  }
  for (size_t i = 0; i < c->n; i++) {
    const bench_plot_point *p = c->p[i];
    if (!p->ref)
      continue;
    double y = to_px(&ay, p->y);
    fmt_tick(buf, sizeof buf, p->y);
    fprintf(f,
            "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#333\" "
            "stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/>\n<text "
            "x=\"%d\" y=\"%.1f\" text-anchor=\"end\" fill=\"#333\">",
            x0, y, x1, y, x1 - 4, y - 6);
    xml_text(f, p->series);
    fprintf(f, " (%s)</text>\n", buf);
  }
}

static int write_chart(const chart_pts *c, const char *dir, FILE *out,
                       FILE *err) {
  const bench_chart *ch = c->p[0]->chart;
  size_t len = strlen(dir) + strlen(ch->name) + 8;
  char *path = malloc(len);
  if (!path) {
    fprintf(err, "weft bench: out of memory for chart %s\n", ch->name);
    return -1;
  }
  snprintf(path, len, "%s/%s.svg", dir, ch->name);
  out_file file;
  if (out_file_open(&file, path) != 0) {
    fprintf(err, "weft bench: cannot write %s: %s\n", path, strerror(errno));
    free(path);
    return -1;
  }
  if (ch->x_label)
    lines_chart(file.f, c);
  else
    bars_chart(file.f, c);
  fputs("</svg>\n", file.f);
  if (out_file_close(&file, 1) != 0) {
    fprintf(err, "weft bench: cannot write %s: %s\n", path, strerror(errno));
    free(path);
    return -1;
  }
  fprintf(out, "chart written to %s\n", path);
  free(path);
  return 0;
}

int bench_plot_write(const bench_plot_point *p, size_t n, const char *dir,
                     FILE *out, FILE *err) {
  chart_pts c = {malloc((n ? n : 1) * sizeof *c.p), 0};
  if (!c.p) {
    fprintf(err, "weft bench: out of memory for the charts\n");
    return -1;
  }
  int rc = 0;
  for (size_t i = 0; i < n; i++) {
    int seen = 0;
    for (size_t j = 0; j < i && !seen; j++)
      seen = p[j].chart == p[i].chart;
    if (seen)
      continue;
    c.n = 0;
    for (size_t j = i; j < n; j++)
      if (p[j].chart == p[i].chart)
        c.p[c.n++] = &p[j];
    if (write_chart(&c, dir, out, err) != 0)
      rc = -1;
  }
  free(c.p);
  return rc;
}
