/* The strict JSON pull parser described in json.h. */
#include "json.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What the parser expects next. */
enum {
  ST_VALUE,        /* a value: at the top, after ':' or after ',' in [] */
  ST_VALUE_OR_END, /* a value or ']': just after '[' */
  ST_KEY,          /* a member name: after ',' in {} */
  ST_KEY_OR_END,   /* a member name or '}': just after '{' */
  ST_COMMA_OR_END, /* ',' or the container's end: after a value in it */
  ST_DONE          /* the top-level value is complete */
};

void trace_json_init(trace_json *j, const void *buf, size_t len) {
  memset(j, 0, sizeof *j);
  j->buf = buf;
  j->len = len;
  j->state = ST_VALUE;
  /* A UTF-8 byte-order mark is not JSON, but editors on some systems write
   * one; skipping it costs nothing and hides nothing. */
  if (len >= 3 && j->buf[0] == 0xEF && j->buf[1] == 0xBB && j->buf[2] == 0xBF)
    j->pos = 3;
}

void trace_json_free(trace_json *j) {
  free(j->scratch);
  j->scratch = NULL;
  j->scratch_cap = 0;
}

static int vfail(trace_json *j, size_t offset, const char *fmt, va_list ap) {
  if (j->failed)
    return -1;
  j->failed = 1;
  if (offset > j->len)
    offset = j->len;
  j->error_offset = offset;
  /* Line and column are counted only now, once, so the fast path does not
   * track them. */
  size_t line = 1, col = 1;
  for (size_t i = 0; i < offset; i++) {
    if (j->buf[i] == '\n') {
      line++;
      col = 1;
    } else {
      col++;
    }
  }
  int n = snprintf(j->error, sizeof j->error,
                   "byte %zu (line %zu, column %zu): ", offset, line, col);
  if (n < 0 || (size_t)n >= sizeof j->error)
    return -1;
  vsnprintf(j->error + n, sizeof j->error - (size_t)n, fmt, ap);
  return -1;
}

int trace_json_fail(trace_json *j, size_t offset, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfail(j, offset, fmt, ap);
  va_end(ap);
  return -1;
}

const char *trace_json_error(const trace_json *j) {
  return j->failed ? j->error : "";
}

int trace_json_is(const trace_json_token *t, const char *s) {
  if (t->type != TRACE_JSON_KEY && t->type != TRACE_JSON_STRING)
    return 0;
  size_t n = strlen(s);
  return t->len == n && memcmp(t->str, s, n) == 0;
}

const char *trace_json_type_name(trace_json_type type) {
  switch (type) {
  case TRACE_JSON_OBJECT:
  case TRACE_JSON_END_OBJECT:
    return "an object";
  case TRACE_JSON_ARRAY:
  case TRACE_JSON_END_ARRAY:
    return "an array";
  case TRACE_JSON_KEY:
    return "a key";
  case TRACE_JSON_STRING:
    return "a string";
  case TRACE_JSON_NUMBER:
    return "a number";
  case TRACE_JSON_TRUE:
  case TRACE_JSON_FALSE:
    return "a boolean";
  case TRACE_JSON_NULL:
    return "null";
  case TRACE_JSON_EOF:
    return "the end of input";
  case TRACE_JSON_ERROR:
    break;
  }
  return "an error";
}

/* Describes the byte at pos for a message: 'x', NUL byte, byte 0xNN. */
static const char *describe(const trace_json *j, size_t pos, char *out,
                            size_t size) {
  if (pos >= j->len) {
    snprintf(out, size, "end of input");
    return out;
  }
  unsigned c = j->buf[pos];
  if (c == 0)
    snprintf(out, size, "NUL byte");
  else if (c > 0x20 && c < 0x7F)
    snprintf(out, size, "'%c'", (char)c);
  else
    snprintf(out, size, "byte 0x%02X", c);
  return out;
}

static int is_ws(unsigned c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

static void skip_ws(trace_json *j) {
  while (j->pos < j->len && is_ws(j->buf[j->pos]))
    j->pos++;
}

size_t trace_json_utf8_len(const unsigned char *s, size_t n) {
  unsigned c = s[0];
  if (c < 0x80)
    return 1;
  if (c < 0xC2)
    return 0;
  if (c < 0xE0)
    return n >= 2 && (s[1] & 0xC0) == 0x80 ? 2 : 0;
  if (c < 0xF0) {
    if (n < 3 || (s[2] & 0xC0) != 0x80)
      return 0;
    unsigned lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    return s[1] >= lo && s[1] <= hi ? 3 : 0;
  }
  if (c < 0xF5) {
    if (n < 4 || (s[2] & 0xC0) != 0x80 || (s[3] & 0xC0) != 0x80)
      return 0;
    unsigned lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    return s[1] >= lo && s[1] <= hi ? 4 : 0;
  }
  return 0;
}

static int scratch_put(trace_json *j, size_t *n, const void *src, size_t k) {
  if (k == 0)
    return 0;
  if (*n + k > j->scratch_cap) {
    size_t cap = j->scratch_cap ? j->scratch_cap : 256;
    while (cap < *n + k)
      cap *= 2;
    char *p = realloc(j->scratch, cap);
    if (!p)
      return trace_json_fail(j, j->pos, "out of memory decoding a string");
    j->scratch = p;
    j->scratch_cap = cap;
  }
  memcpy(j->scratch + *n, src, k);
  *n += k;
  return 0;
}

static int hex4(const unsigned char *s, unsigned *out) {
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    unsigned c = s[i], d;
    if (c >= '0' && c <= '9')
      d = c - '0';
    else if (c >= 'a' && c <= 'f')
      d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F')
      d = c - 'A' + 10;
    else
      return -1;
    v = v * 16 + d;
  }
  *out = v;
  return 0;
}

/* Checks one raw (unescaped) byte sequence at i inside a string; returns its
 * length, or 0 after failing. */
static size_t raw_char(trace_json *j, size_t i) {
  unsigned c = j->buf[i];
  if (c >= 0x20 && c < 0x80)
    return 1;
  if (c == 0) {
    trace_json_fail(j, i, "NUL byte in a string");
    return 0;
  }
  if (c < 0x20) {
    trace_json_fail(j, i, "control character 0x%02X in a string (escape it)",
                    c);
    return 0;
  }
  size_t k = trace_json_utf8_len(j->buf + i, j->len - i);
  if (k == 0)
    trace_json_fail(j, i, "invalid UTF-8 in a string");
  return k;
}

/* Decodes the escape at i (the byte after the backslash is i + 1) into the
 * scratch buffer; returns the escape's length in the input, or 0 on error. */
static size_t escape(trace_json *j, size_t i, size_t *n) {
  if (i + 1 >= j->len) {
    trace_json_fail(j, i, "unterminated string (input ends in an escape)");
    return 0;
  }
  unsigned c = j->buf[i + 1];
  char one;
  switch (c) {
  case '"':
  case '\\':
  case '/':
    one = (char)c;
    break;
  case 'b':
    one = '\b';
    break;
  case 'f':
    one = '\f';
    break;
  case 'n':
    one = '\n';
    break;
  case 'r':
    one = '\r';
    break;
  case 't':
    one = '\t';
    break;
  case 'u': {
    unsigned cp, lo;
    size_t used = 6;
    if (i + 6 > j->len || hex4(j->buf + i + 2, &cp) != 0) {
      trace_json_fail(j, i, "invalid \\u escape (needs 4 hex digits)");
      return 0;
    }
    if (cp >= 0xDC00 && cp <= 0xDFFF) {
      trace_json_fail(j, i, "invalid \\u escape: unpaired low surrogate");
      return 0;
    }
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      if (i + 12 > j->len || j->buf[i + 6] != '\\' || j->buf[i + 7] != 'u' ||
          hex4(j->buf + i + 8, &lo) != 0 || lo < 0xDC00 || lo > 0xDFFF) {
        trace_json_fail(j, i, "invalid \\u escape: unpaired high surrogate");
        return 0;
      }
      cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
      used = 12;
    }
    if (cp == 0) {
      trace_json_fail(j, i, "\\u0000 in a string is not accepted");
      return 0;
    }
    unsigned char u[4];
    size_t k;
    if (cp < 0x80) {
      u[0] = (unsigned char)cp;
      k = 1;
    } else if (cp < 0x800) {
      u[0] = (unsigned char)(0xC0 | (cp >> 6));
      u[1] = (unsigned char)(0x80 | (cp & 0x3F));
      k = 2;
    } else if (cp < 0x10000) {
      u[0] = (unsigned char)(0xE0 | (cp >> 12));
      u[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
      u[2] = (unsigned char)(0x80 | (cp & 0x3F));
      k = 3;
    } else {
      u[0] = (unsigned char)(0xF0 | (cp >> 18));
      u[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
      u[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
      u[3] = (unsigned char)(0x80 | (cp & 0x3F));
      k = 4;
    }
    return scratch_put(j, n, u, k) ? 0 : used;
  }
  default: {
    char what[32];
    trace_json_fail(j, i, "invalid escape '\\' followed by %s",
                    describe(j, i + 1, what, sizeof what));
    return 0;
  }
  }
  return scratch_put(j, n, &one, 1) ? 0 : 2;
}

/* Reads the string whose opening quote is at j->pos. */
static int read_string(trace_json *j, trace_json_token *t) {
  size_t start = j->pos + 1, i = start;
  /* Fast path: no escapes, so the token points into the input. Plain ASCII
   * is scanned in a tight loop; anything else goes through raw_char. */
  while (i < j->len) {
    unsigned c = j->buf[i];
    if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
      i++;
      continue;
    }
    if (c == '"') {
      t->str = (const char *)j->buf + start;
      t->len = i - start;
      j->pos = i + 1;
      return 0;
    }
    if (c == '\\')
      break;
    size_t k = raw_char(j, i);
    if (k == 0)
      return -1;
    i += k;
  }
  if (i >= j->len)
    return trace_json_fail(j, j->pos, "unterminated string");
  /* Slow path: decode into the scratch buffer. */
  size_t n = 0;
  if (scratch_put(j, &n, j->buf + start, i - start))
    return -1;
  while (i < j->len) {
    unsigned c = j->buf[i];
    if (c == '"') {
      t->str = j->scratch;
      t->len = n;
      j->pos = i + 1;
      return 0;
    }
    size_t k = c == '\\' ? escape(j, i, &n) : raw_char(j, i);
    if (k == 0)
      return -1;
    if (c != '\\' && scratch_put(j, &n, j->buf + i, k))
      return -1;
    i += k;
  }
  return trace_json_fail(j, j->pos, "unterminated string");
}

static int is_digit(unsigned c) { return c >= '0' && c <= '9'; }

/* Exact powers of ten as doubles: 10^0 .. 10^22 are all representable. */
static const double pow10_exact[] = {
    1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

static int read_number(trace_json *j, trace_json_token *t) {
  const unsigned char *b = j->buf;
  size_t start = j->pos, i = start, n = j->len;
  int neg = 0;
  char what[32];
  if (b[i] == '-') {
    neg = 1;
    i++;
  }
  if (i >= n)
    return trace_json_fail(j, start, "unterminated number");
  /* Significant digits go into mant while it stays below 2^53, where every
   * integer is exact; exp10 tracks the decimal point and the exponent. */
  uint64_t mant = 0;
  int exact = 1;
  long exp10 = 0;
  uint64_t ival = 0; /* integer part as an integer, for is_integer */
  int ival_ok = 1;
  if (b[i] == '0') {
    i++;
    if (i < n && is_digit(b[i]))
      return trace_json_fail(j, start, "leading zero in a number");
  } else if (is_digit(b[i])) {
    while (i < n && is_digit(b[i])) {
      unsigned d = b[i] - '0';
      if (mant <= (UINT64_C(1) << 53) / 10) {
        mant = mant * 10 + d;
      } else {
        exact = 0; /* strtod reads it; exp10 keeps the magnitude */
        exp10++;
      }
      if (ival > (UINT64_MAX - d) / 10)
        ival_ok = 0;
      else
        ival = ival * 10 + d;
      i++;
    }
  } else {
    return trace_json_fail(j, i, "invalid number: expected a digit, found %s",
                           describe(j, i, what, sizeof what));
  }
  int is_int = 1;
  if (i < n && b[i] == '.') {
    is_int = 0;
    i++;
    if (i >= n || !is_digit(b[i]))
      return trace_json_fail(j, i,
                             "invalid number: expected a digit after '.'");
    while (i < n && is_digit(b[i])) {
      unsigned d = b[i] - '0';
      if (exact && mant <= (UINT64_C(1) << 53) / 10) {
        mant = mant * 10 + d;
        exp10--;
      } else if (d != 0) {
        exact = 0;
      }
      i++;
    }
  }
  if (i < n && (b[i] == 'e' || b[i] == 'E')) {
    is_int = 0;
    i++;
    int eneg = 0;
    if (i < n && (b[i] == '+' || b[i] == '-'))
      eneg = b[i++] == '-';
    if (i >= n || !is_digit(b[i]))
      return trace_json_fail(
          j, i, "invalid number: expected a digit in the exponent");
    long e = 0;
    while (i < n && is_digit(b[i])) {
      if (e < 100000)
        e = e * 10 + (b[i] - '0');
      i++;
    }
    exp10 += eneg ? -e : e;
  }
  if (i - start > TRACE_JSON_MAX_NUMBER)
    return trace_json_fail(j, start, "number longer than %d characters",
                           TRACE_JSON_MAX_NUMBER);
  double v;
  if (exact && mant <= (UINT64_C(1) << 53) && exp10 >= -22 && exp10 <= 22) {
    /* Both operands are exact, so one IEEE operation rounds correctly. */
    v = exp10 < 0 ? (double)mant / pow10_exact[-exp10]
                  : (double)mant * pow10_exact[exp10];
    if (neg)
      v = -v;
  } else {
    char tmp[TRACE_JSON_MAX_NUMBER + 1];
    memcpy(tmp, b + start, i - start);
    tmp[i - start] = '\0';
    v = strtod(tmp, NULL);
  }
  if (!isfinite(v))
    return trace_json_fail(j, start, "number out of range");
  t->num = v;
  t->is_integer = 0;
  if (is_int && ival_ok) {
    if (!neg && ival <= (uint64_t)INT64_MAX) {
      t->integer = (int64_t)ival;
      t->is_integer = 1;
    } else if (neg && ival <= (uint64_t)INT64_MAX + 1) {
      t->integer = ival == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)ival;
      t->is_integer = 1;
    }
  }
  j->pos = i;
  return 0;
}

static int read_literal(trace_json *j, const char *word) {
  size_t k = strlen(word);
  if (j->len - j->pos < k || memcmp(j->buf + j->pos, word, k) != 0)
    return trace_json_fail(j, j->pos, "invalid literal (expected '%s')", word);
  j->pos += k;
  return 0;
}

static void after_value(trace_json *j) {
  j->state = j->depth == 0 ? ST_DONE : ST_COMMA_OR_END;
}

static trace_json_type fail_type(trace_json *j, trace_json_token *t) {
  (void)j;
  t->type = TRACE_JSON_ERROR;
  return TRACE_JSON_ERROR;
}

static trace_json_type read_value(trace_json *j, trace_json_token *t) {
  unsigned c = j->buf[j->pos];
  char what[32];
  switch (c) {
  case '{':
  case '[':
    if (j->depth >= TRACE_JSON_MAX_DEPTH) {
      trace_json_fail(j, j->pos, "nesting deeper than %d levels",
                      TRACE_JSON_MAX_DEPTH);
      return fail_type(j, t);
    }
    j->stack[j->depth++] = (unsigned char)c;
    j->pos++;
    j->state = c == '{' ? ST_KEY_OR_END : ST_VALUE_OR_END;
    return t->type = c == '{' ? TRACE_JSON_OBJECT : TRACE_JSON_ARRAY;
  case '"':
    if (read_string(j, t))
      return fail_type(j, t);
    t->type = TRACE_JSON_STRING;
    break;
  case 't':
  case 'f':
  case 'n': {
    const char *word = c == 't' ? "true" : c == 'f' ? "false" : "null";
    if (read_literal(j, word))
      return fail_type(j, t);
    t->type = c == 't'   ? TRACE_JSON_TRUE
              : c == 'f' ? TRACE_JSON_FALSE
                         : TRACE_JSON_NULL;
    break;
  }
  default:
    if (c == '-' || is_digit(c)) {
      if (read_number(j, t))
        return fail_type(j, t);
      t->type = TRACE_JSON_NUMBER;
      break;
    }
    if (c == ']' && j->state == ST_VALUE && j->depth > 0 &&
        j->stack[j->depth - 1] == '[')
      trace_json_fail(j, j->pos, "trailing comma before ']'");
    else
      trace_json_fail(j, j->pos, "expected a value, found %s",
                      describe(j, j->pos, what, sizeof what));
    return fail_type(j, t);
  }
  after_value(j);
  return t->type;
}

static trace_json_type end_container(trace_json *j, trace_json_token *t) {
  unsigned char open = j->stack[--j->depth];
  j->pos++;
  after_value(j);
  return t->type = open == '{' ? TRACE_JSON_END_OBJECT : TRACE_JSON_END_ARRAY;
}

trace_json_type trace_json_next(trace_json *j, trace_json_token *t) {
  char what[32];
  t->str = NULL;
  t->len = 0;
  if (j->failed)
    return fail_type(j, t);
  for (;;) {
    skip_ws(j);
    t->offset = j->pos;
    if (j->state == ST_DONE) {
      if (j->pos < j->len) {
        trace_json_fail(j, j->pos, "unexpected %s after the JSON value",
                        describe(j, j->pos, what, sizeof what));
        return fail_type(j, t);
      }
      return t->type = TRACE_JSON_EOF;
    }
    if (j->pos >= j->len) {
      if (j->depth == 0)
        trace_json_fail(j, j->pos,
                        j->pos == 0
                            ? "empty input (weft writes its trace at "
                              "weft_shutdown: a run that crashed or never "
                              "shut down leaves the file empty)"
                            : "no JSON value in the input");
      else
        trace_json_fail(j, j->pos, "unexpected end of input inside %s",
                        j->stack[j->depth - 1] == '{' ? "an object"
                                                      : "an array");
      return fail_type(j, t);
    }
    unsigned c = j->buf[j->pos];
    switch (j->state) {
    case ST_VALUE_OR_END:
      if (c == ']')
        return end_container(j, t);
      return read_value(j, t);
    case ST_VALUE:
      return read_value(j, t);
    case ST_KEY_OR_END:
    case ST_KEY:
      if (c == '}' && j->state == ST_KEY_OR_END)
        return end_container(j, t);
      if (c != '"') {
        if (c == '}')
          trace_json_fail(j, j->pos, "trailing comma before '}'");
        else
          trace_json_fail(j, j->pos, "expected a string key, found %s",
                          describe(j, j->pos, what, sizeof what));
        return fail_type(j, t);
      }
      if (read_string(j, t))
        return fail_type(j, t);
      skip_ws(j);
      if (j->pos >= j->len || j->buf[j->pos] != ':') {
        trace_json_fail(j, j->pos, "expected ':' after an object key, found %s",
                        describe(j, j->pos, what, sizeof what));
        return fail_type(j, t);
      }
      j->pos++;
      j->state = ST_VALUE;
      return t->type = TRACE_JSON_KEY;
    case ST_COMMA_OR_END: {
      unsigned char open = j->stack[j->depth - 1];
      unsigned char close = open == '{' ? '}' : ']';
      if (c == close)
        return end_container(j, t);
      if (c != ',') {
        trace_json_fail(j, j->pos, "expected ',' or '%c' after %s, found %s",
                        close,
                        open == '{' ? "an object member" : "an array element",
                        describe(j, j->pos, what, sizeof what));
        return fail_type(j, t);
      }
      j->pos++;
      j->state = open == '{' ? ST_KEY : ST_VALUE;
      continue;
    }
    default:
      trace_json_fail(j, j->pos, "internal error: bad parser state");
      return fail_type(j, t);
    }
  }
}

int trace_json_skip(trace_json *j, const trace_json_token *t) {
  if (t->type == TRACE_JSON_ERROR || j->failed)
    return -1;
  if (t->type != TRACE_JSON_OBJECT && t->type != TRACE_JSON_ARRAY)
    return 0;
  int target = j->depth - 1;
  trace_json_token u;
  for (;;) {
    trace_json_type type = trace_json_next(j, &u);
    if (type == TRACE_JSON_ERROR)
      return -1;
    if ((type == TRACE_JSON_END_OBJECT || type == TRACE_JSON_END_ARRAY) &&
        j->depth == target)
      return 0;
  }
}
