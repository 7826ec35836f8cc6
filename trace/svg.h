/* An SVG timeline of a trace: one lane per GPU stream (grouped by device)
 * and per CPU thread, ops coloured by kind with a legend, a time axis in ms,
 * a band at the top shading when kernels overlapped copies, and one for the
 * time lost and why (`weft trace explain`).
 *
 * Ops narrower than a pixel are merged per lane into one rectangle (coloured
 * by the kind that took most of its time), so a trace of a million ops still
 * gives a file of a few thousand rectangles. All text from the trace is
 * escaped for XML. */
#ifndef WEFT_TRACE_SVG_H
#define WEFT_TRACE_SVG_H

#include <stdio.h>

#include "analysis.h"
#include "explain.h"

enum {
  TRACE_SVG_MIN_WIDTH = 400,
  TRACE_SVG_MAX_WIDTH = 20000,
  TRACE_SVG_DEFAULT_WIDTH = 1600,
  TRACE_SVG_MAX_LANES = 512 /* more are counted in a note, not drawn */
};

typedef struct trace_svg_opts {
  int width;         /* pixels, clamped to the range above; 0: default */
  const char *title; /* shown at the top, e.g. the file name; may be NULL */
  /* When given, a band under the overlap band shows the lost stretches
   * coloured by cause, with the causes in the legend. */
  const trace_explanation *explain;
} trace_svg_opts;

/* Writes the timeline of m (analysed into a) to f. Returns 0, or -1 when out
 * of memory or writing failed. */
int trace_svg_write(FILE *f, const trace_model *m, const trace_analysis *a,
                    const trace_svg_opts *opts);

#endif
