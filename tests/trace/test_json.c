/* The strict JSON reader: tokens and values of valid input, exact numbers,
 * and a clear error at the right byte for each kind of malformed, truncated
 * or hostile input. */
#include <stdint.h>

#include "json.h"
#include "trace_test.h"

/* Reads every token of buf[0, n) (an exact-size copy, so ASan catches any
 * read past the end). Returns 0 when the whole input is valid, else -1 with
 * the message in msg. */
static int walk(const char *buf, size_t n, char *msg, size_t size) {
  char *copy = malloc(n ? n : 1);
  EXPECT(copy != NULL);
  memcpy(copy, buf, n);
  trace_json j;
  trace_json_init(&j, copy, n);
  trace_json_token t;
  trace_json_type type;
  size_t count = 0;
  while ((type = trace_json_next(&j, &t)) != TRACE_JSON_EOF &&
         type != TRACE_JSON_ERROR)
    EXPECT(++count < 10 * n + 10); /* always progresses */
  int rc = type == TRACE_JSON_EOF ? 0 : -1;
  snprintf(msg, size, "%s", trace_json_error(&j));
  /* After the end or an error, it stays there. */
  EXPECT(trace_json_next(&j, &t) == type);
  trace_json_free(&j);
  free(copy);
  return rc;
}

static void valid(const char *text) {
  char msg[300];
  EXPECT_MSG(walk(text, strlen(text), msg, sizeof msg) == 0, "'%s': %s", text,
             msg);
}

/* Expects an error containing want at byte offset at. */
static void invalid_n(const char *text, size_t n, size_t at, const char *want) {
  char msg[300], where[64];
  EXPECT_MSG(walk(text, n, msg, sizeof msg) != 0, "accepted: '%.60s'", text);
  snprintf(where, sizeof where, "byte %zu ", at);
  EXPECT_MSG(strncmp(msg, where, strlen(where)) == 0,
             "'%.60s': error '%s' is not at byte %zu", text, msg, at);
  EXPECT_MSG(strstr(msg, want) != NULL, "'%.60s': error '%s' lacks '%s'", text,
             msg, want);
}

static void invalid(const char *text, size_t at, const char *want) {
  invalid_n(text, strlen(text), at, want);
}

static void test_tokens(void) {
  const char *text = "{\"a\": [1, -2.5e3, true, false, null, "
                     "\"x\\u00e9\\ud83d\\ude00\\n\\\"\"], \"b\": {}}";
  trace_json j;
  trace_json_init(&j, text, strlen(text));
  trace_json_token t;
  EXPECT(trace_json_next(&j, &t) == TRACE_JSON_OBJECT);
  EXPECT(trace_json_next(&j, &t) == TRACE_JSON_KEY && trace_json_is(&t, "a"));
  EXPECT_EQ_INT(t.offset, 1);
  EXPECT(trace_json_next(&j, &t) == TRACE_JSON_ARRAY);
  EXPECT(trace_json_next(&j, &t) == TRACE_JSON_NUMBER);
  EXPECT(t.is_integer && t.integer == 1 && t.num == 1.0);
  EXPECT(trace_json_next(&j, &t) == TRACE_JSON_NUMBER);
  EXPECT(!t.is_integer && t.num == -2500.0);
  EXPECT(trace_json_next(&j, &t) == TRACE_JSON_TRUE);
  EXPECT(trace_json_next(&j, &t) == TRACE_JSON_FALSE);
  EXPECT(trace_json_next(&j, &t) == TRACE_JSON_NULL);
  EXPECT(trace_json_next(&j, &t) == TRACE_JSON_STRING);
  /* x, e-acute (2 bytes), U+1F600 (4 bytes), newline, quote */
  EXPECT_EQ_INT(t.len, 9);
  EXPECT(memcmp(t.str, "x\xC3\xA9\xF0\x9F\x98\x80\n\"", 9) == 0);
  EXPECT(trace_json_next(&j, &t) == TRACE_JSON_END_ARRAY);
  EXPECT(trace_json_next(&j, &t) == TRACE_JSON_KEY && trace_json_is(&t, "b"));
  EXPECT(trace_json_next(&j, &t) == TRACE_JSON_OBJECT);
  EXPECT(trace_json_next(&j, &t) == TRACE_JSON_END_OBJECT);
  EXPECT(trace_json_next(&j, &t) == TRACE_JSON_END_OBJECT);
  EXPECT(trace_json_next(&j, &t) == TRACE_JSON_EOF);
  trace_json_free(&j);
}

static void test_skip(void) {
  const char *text = "{\"skip\": {\"x\": [1, [2, {\"y\": []}]], \"z\": \"w\"},"
                     " \"keep\": 7}";
  trace_json j;
  trace_json_init(&j, text, strlen(text));
  trace_json_token t;
  EXPECT(trace_json_next(&j, &t) == TRACE_JSON_OBJECT);
  EXPECT(trace_json_next(&j, &t) == TRACE_JSON_KEY);
  EXPECT(trace_json_next(&j, &t) == TRACE_JSON_OBJECT);
  EXPECT(trace_json_skip(&j, &t) == 0);
  EXPECT(trace_json_next(&j, &t) == TRACE_JSON_KEY &&
         trace_json_is(&t, "keep"));
  EXPECT(trace_json_next(&j, &t) == TRACE_JSON_NUMBER && t.integer == 7);
  EXPECT(trace_json_skip(&j, &t) == 0); /* a scalar: nothing to skip */
  EXPECT(trace_json_next(&j, &t) == TRACE_JSON_END_OBJECT);
  EXPECT(trace_json_next(&j, &t) == TRACE_JSON_EOF);
  trace_json_free(&j);
}

static double number(const char *text, int *is_int, int64_t *ival) {
  trace_json j;
  trace_json_init(&j, text, strlen(text));
  trace_json_token t;
  EXPECT_MSG(trace_json_next(&j, &t) == TRACE_JSON_NUMBER, "'%s': %s", text,
             trace_json_error(&j));
  EXPECT(trace_json_next(&j, &t) == TRACE_JSON_EOF);
  trace_json_free(&j);
  *is_int = t.is_integer;
  *ival = t.integer;
  return t.num;
}

static void test_numbers(void) {
  int is_int;
  int64_t iv;
  EXPECT(number("0", &is_int, &iv) == 0 && is_int && iv == 0);
  EXPECT(number("-0", &is_int, &iv) == 0 && is_int && iv == 0);
  EXPECT(number("9223372036854775807", &is_int, &iv) > 9.2e18 && is_int &&
         iv == INT64_MAX);
  EXPECT(number("-9223372036854775808", &is_int, &iv) < -9.2e18 && is_int &&
         iv == INT64_MIN);
  EXPECT(number("9223372036854775808", &is_int, &iv) == 9223372036854775808.0 &&
         !is_int);
  EXPECT(number("12.0", &is_int, &iv) == 12.0 && !is_int);
  EXPECT(number("1e-999", &is_int, &iv) == 0.0); /* underflow reads as 0 */
  EXPECT(number("1.7976931348623157e308", &is_int, &iv) ==
         1.7976931348623157e308);

  /* The fast path and strtod agree exactly, on numbers shaped like trace
   * timestamps and on arbitrary ones. */
  uint64_t x = 88172645463325252u;
  for (int i = 0; i < 200000; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    char text[64];
    switch (i % 4) {
    case 0: /* Kineto-like: 1.7e12 us with 3 decimals */
      snprintf(text, sizeof text, "%.3f",
               1.7e12 + (double)(x % 100000000000u) / 1000.0);
      break;
    case 1:
      snprintf(text, sizeof text, "%.17g", (double)(x >> 11) * 0x1p-30);
      break;
    case 2:
      snprintf(text, sizeof text, "%llu.%llue%d",
               (unsigned long long)(x % 100000u),
               (unsigned long long)((x >> 20) % 1000000u),
               (int)((x >> 40) % 41) - 20);
      break;
    default:
      snprintf(text, sizeof text, "-%.6f", (double)(x % 1000000007u) / 997.0);
    }
    double want = strtod(text, NULL);
    double got = number(text, &is_int, &iv);
    EXPECT_MSG(got == want, "%s: %.17g != %.17g", text, got, want);
  }
}

static void test_errors(void) {
  invalid("", 0, "empty input");
  invalid("  \n", 3, "no JSON value");
  invalid("[1,2", 4, "unexpected end of input inside an array");
  invalid("{\"a\":1", 6, "unexpected end of input inside an object");
  invalid("[1,]", 3, "trailing comma before ']'");
  invalid("{\"a\":1,}", 7, "trailing comma before '}'");
  invalid("[01]", 1, "leading zero");
  invalid("[1e999]", 1, "number out of range");
  invalid("[-1e999]", 1, "number out of range");
  invalid("[1.]", 3, "expected a digit after '.'");
  invalid("[1e]", 3, "expected a digit in the exponent");
  invalid("[-]", 2, "expected a digit");
  invalid("[.5]", 1, "expected a value, found '.'");
  invalid("[+1]", 1, "expected a value, found '+'");
  invalid("[NaN]", 1, "expected a value");
  invalid("[Infinity]", 1, "expected a value");
  invalid("[\"\\x\"]", 2, "invalid escape");
  invalid("[\"\\u12\"]", 2, "invalid \\u escape");
  invalid("[\"\\ud800\"]", 2, "unpaired high surrogate");
  invalid("[\"\\ud800\\u0041\"]", 2, "unpaired high surrogate");
  invalid("[\"\\udc00\"]", 2, "unpaired low surrogate");
  invalid("[\"\\u0000\"]", 2, "\\u0000");
  invalid_n("[\"a\0b\"]", 7, 3, "NUL byte in a string");
  invalid_n("[1]\0", 4, 3, "NUL byte after the JSON value");
  invalid_n("[1,\0]", 5, 3, "expected a value, found NUL byte");
  invalid("[1] x", 4, "unexpected 'x' after the JSON value");
  invalid("[1][2]", 3, "after the JSON value");
  invalid("[\"\xC0\xAF\"]", 2, "invalid UTF-8");         /* overlong '/' */
  invalid("[\"\xED\xA0\x80\"]", 2, "invalid UTF-8");     /* a surrogate */
  invalid("[\"\xF4\x90\x80\x80\"]", 2, "invalid UTF-8"); /* past U+10FFFF */
  invalid("[\"\xE2\x82\"]", 2, "invalid UTF-8");         /* cut short */
  invalid("[\"\xFF\"]", 2, "invalid UTF-8");
  invalid("[\"abc", 1, "unterminated string");
  invalid("[\"ab\\", 4, "unterminated string");
  invalid("[\"tab\there\"]", 5, "control character 0x09");
  invalid("[tru]", 1, "invalid literal");
  invalid("[nul", 1, "invalid literal");
  invalid("{1:2}", 1, "expected a string key");
  invalid("{\"a\" 1}", 5, "expected ':'");
  invalid("[1 2]", 3, "expected ',' or ']'");
  invalid("{\"a\":1 \"b\":2}", 7, "expected ',' or '}'");
  invalid("[\n  1,\n  x]", 9, "line 3, column 3");

  /* Hostile sizes: deep nesting, long numbers. */
  size_t deep = 100000;
  char *b = malloc(deep);
  EXPECT(b != NULL);
  memset(b, '[', deep);
  invalid_n(b, deep, TRACE_JSON_MAX_DEPTH, "nesting deeper than 128");
  memset(b, '{', deep);
  for (size_t i = 0; i + 5 <= deep; i += 5)
    memcpy(b + i, "{\"a\":", 5);
  invalid_n(b, deep - deep % 5, 5 * TRACE_JSON_MAX_DEPTH,
            "nesting deeper than 128");
  b[0] = '[';
  memset(b + 1, '7', 300);
  b[301] = ']';
  invalid_n(b, 302, 1, "number longer than 100");
  free(b);

  /* 128 levels is fine. */
  char ok[2 * TRACE_JSON_MAX_DEPTH + 1];
  memset(ok, '[', TRACE_JSON_MAX_DEPTH);
  memset(ok + TRACE_JSON_MAX_DEPTH, ']', TRACE_JSON_MAX_DEPTH);
  ok[2 * TRACE_JSON_MAX_DEPTH] = '\0';
  valid(ok);
}

static void test_valid_edge_cases(void) {
  valid("\xEF\xBB\xBF[1]"); /* a byte-order mark */
  valid(" \t\r\n{} \n");
  valid("\"top-level string\"");
  valid("-0.0e+0");
  valid("[\"\\ud83d\\ude00 \xF0\x9F\x98\x80 \\/\"]");
  valid("{\"\":\"\"}");
}

/* Every strict prefix of a valid document is rejected, cleanly. */
static void test_truncation(void) {
  const char *doc = "{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"k\\u00e9\","
                    " \"ts\": 1.5e1, \"dur\": -2, \"args\": {\"a\": [true, "
                    "false, null]}}], \"x\": \"\xF0\x9F\x98\x80\"}";
  size_t n = strlen(doc);
  char msg[300];
  EXPECT(walk(doc, n, msg, sizeof msg) == 0);
  for (size_t k = 0; k < n; k++)
    EXPECT_MSG(walk(doc, k, msg, sizeof msg) != 0 && msg[0],
               "prefix of %zu bytes accepted", k);
}

int main(void) {
  test_tokens();
  test_skip();
  test_numbers();
  test_errors();
  test_valid_edge_cases();
  test_truncation();
  printf("json: ok\n");
  return 0;
}
