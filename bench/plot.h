/* Charts of benchmark rows, as SVG files: `weft bench --plot DIR`.
 *
 * A scenario marks a row as a point of a chart with bench_plot() (bench.h)
 * before it reports the row; the runner gathers each chart's points and
 * writes DIR/<chart name>.svg once every scenario has run. Two kinds:
 *
 *   lines  x_label set: one line per series, a point per row at (x, the
 *          row's median), min-max whiskers, linear or log axes;
 *   bars   x_label NULL: one bar per row, labelled by its series, in the
 *          order reported; a row marked as a reference (bench_plot_ref) is
 *          drawn as a dashed horizontal line across the bars instead.
 *
 * The y axis is the rows' unit (all rows of a chart share it). Plain SVG
 * 1.1 with no script or external reference, so a browser, Perfetto's
 * neighbours, rsvg-convert and ImageMagick all render it. */
#ifndef WEFT_BENCH_PLOT_H
#define WEFT_BENCH_PLOT_H

#include <stddef.h>
#include <stdio.h>

#include "bench.h"

/* One row as a chart sees it. */
typedef struct bench_plot_point {
  const bench_chart *chart;
  const char *series; /* line or bar label */
  double x;           /* lines only */
  int ref;            /* bars only: a reference line, not a bar */
  double y, lo, hi;   /* the row's median, min and max */
  const char *unit;
} bench_plot_point;

/* Writes DIR/<name>.svg for each chart that has points (dir must exist),
 * and names each file written on out. Returns 0, or -1 after saying on
 * err which file could not be written. */
int bench_plot_write(const bench_plot_point *p, size_t n, const char *dir,
                     FILE *out, FILE *err);

#endif
