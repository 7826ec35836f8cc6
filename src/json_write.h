/* Writing JSON text: the one string escaper, and the member and number forms,
 * of the three files weft writes as JSON: the trace (src/trace.c), the trace
 * report (tools/trace/report.c) and the benchmark results (bench/bench.c).
 * Header-only, so the library, the tools and the benchmarks each include it
 * without linking anything new.
 *
 * Strings are bytes: UTF-8 passes through unchanged, and nothing here
 * checks it, because every writer's strings are either its own or were
 * validated when read. */
#ifndef WEFT_JSON_WRITE_H
#define WEFT_JSON_WRITE_H

#include <math.h>
#include <stdio.h>

/* 1 for the bytes a JSON string cannot hold as they are: the quote, the
 * backslash and control characters (RFC 8259), and DEL, which is legal but
 * invisible in a terminal or an editor. */
static inline int json_write_needs_escape(unsigned char c) {
  return c == '"' || c == '\\' || c < 0x20 || c == 0x7F;
}

/* Writes s as a JSON string, quoted: '"' and '\\' after a backslash, control
 * characters and DEL as \u00XX, every other byte as it is. */
static inline void json_write_string(FILE *f, const char *s) {
  fputc('"', f);
  for (;;) {
    /* Runs of plain bytes go out in one piece: names are mostly plain. */
    size_t n = 0;
    while (s[n] && !json_write_needs_escape((unsigned char)s[n]))
      n++;
    fwrite(s, 1, n, f);
    s += n;
    if (!*s)
      break;
    unsigned char c = (unsigned char)*s++;
    if (c == '"' || c == '\\')
      fprintf(f, "\\%c", c);
    else
      fprintf(f, "\\u%04x", c);
  }
  fputc('"', f);
}

/* Writes an object member's name and its colon, `"key": `, spaced as the
 * report and the benchmark results are. */
static inline void json_write_key(FILE *f, const char *key) {
  json_write_string(f, key);
  fputs(": ", f);
}

/* Writes v with a fixed number of decimals, or null when v is not finite:
 * JSON has no NaN or infinity. */
static inline void json_write_fixed(FILE *f, double v, int decimals) {
  if (isfinite(v))
    fprintf(f, "%.*f", decimals, v);
  else
    fputs("null", f);
}

#endif
