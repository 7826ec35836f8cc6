/* Writing JSON text: the one string escaper, and the member and number forms,
 * of the three files weft writes as JSON: the trace (src/trace_write.c), the
 * trace report (trace/report.c) and the benchmark results (bench/bench.c).
 * Header-only, so the library, the trace reader and the benchmarks each
 * include it without linking anything new. Internal: never installed.
 *
 * Strings are UTF-8: valid sequences pass through unchanged, and a byte
 * that does not begin one (a name cut in the middle of a character, a
 * kernel name in another encoding) is written as U+FFFD, so that a strict
 * reader, weft's own included, accepts every file written. */
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

/* The length of the valid UTF-8 sequence of two to four bytes at s (RFC
 * 3629: no overlong forms, no surrogates, nothing past U+10FFFF), or 0. */
static inline size_t json_write_utf8_len(const unsigned char *s) {
  unsigned c = s[0];
  size_t n = c >= 0xC2 && c <= 0xDF   ? 2
             : c >= 0xE0 && c <= 0xEF ? 3
             : c >= 0xF0 && c <= 0xF4 ? 4
                                      : 0;
  if (n == 0)
    return 0;
  for (size_t i = 1; i < n; i++)
    if ((s[i] & 0xC0) != 0x80)
      return 0;
  if ((c == 0xE0 && s[1] < 0xA0) || (c == 0xED && s[1] > 0x9F) ||
      (c == 0xF0 && s[1] < 0x90) || (c == 0xF4 && s[1] > 0x8F))
    return 0;
  return n;
}

/* Writes s as a JSON string, quoted: '"' and '\\' after a backslash, control
 * characters and DEL as \u00XX, a byte that begins no valid UTF-8
 * sequence as \ufffd, every other byte as it is. */
static inline void json_write_string(FILE *f, const char *str) {
  const unsigned char *s = (const unsigned char *)str;
  fputc('"', f);
  for (;;) {
    /* Runs of plain bytes go out in one piece: names are mostly plain. */
    size_t n = 0;
    for (;;) {
      if (!s[n] || json_write_needs_escape(s[n]))
        break;
      if (s[n] < 0x80) {
        n++;
        continue;
      }
      size_t k = json_write_utf8_len(s + n);
      if (k == 0)
        break;
      n += k;
    }
    fwrite(s, 1, n, f);
    s += n;
    if (!*s)
      break;
    unsigned char c = *s++;
    if (c == '"' || c == '\\')
      fprintf(f, "\\%c", c);
    else if (c < 0x80)
      fprintf(f, "\\u%04x", c);
    else
      fputs("\\ufffd", f);
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
