/* A strict, bounded JSON reader for trace files: a pull parser over a buffer
 * in memory.
 *
 * Trace files come from other programs and may be truncated, corrupt or
 * hostile, so the reader accepts exactly RFC 8259 JSON and nothing else, and
 * each rejection is one message naming the byte offset (and line and column)
 * where the input went wrong. It never reads outside the buffer, needs no NUL
 * terminator, and allocates only one scratch buffer for strings with escapes
 * (at most as long as the longest such string). Nesting is limited to
 * TRACE_JSON_MAX_DEPTH, numbers to TRACE_JSON_MAX_NUMBER characters and to
 * finite doubles (1e999 is an error, 1e-999 reads as 0).
 *
 * Beyond the RFC it rejects a NUL byte anywhere, "\u0000" in a string (names
 * end up in C strings), and lone UTF-16 surrogates; it skips one leading
 * UTF-8 byte-order mark.
 *
 * Use: trace_json_init, then trace_json_next until TRACE_JSON_EOF or
 * TRACE_JSON_ERROR; trace_json_skip passes over a value the caller does not
 * want. After an error every call returns TRACE_JSON_ERROR and
 * trace_json_error holds the message. One parser is used by one thread. */
#ifndef WEFT_TRACE_JSON_H
#define WEFT_TRACE_JSON_H

#include <stddef.h>
#include <stdint.h>

enum {
  TRACE_JSON_MAX_DEPTH = 128, /* arrays and objects open at once */
  TRACE_JSON_MAX_NUMBER = 100 /* characters in one number */
};

typedef enum trace_json_type {
  TRACE_JSON_ERROR = -1,
  TRACE_JSON_EOF = 0, /* the one top-level value was read, nothing follows */
  TRACE_JSON_OBJECT,  /* '{' */
  TRACE_JSON_END_OBJECT,
  TRACE_JSON_ARRAY, /* '[' */
  TRACE_JSON_END_ARRAY,
  TRACE_JSON_KEY, /* an object member's name; its value comes next */
  TRACE_JSON_STRING,
  TRACE_JSON_NUMBER,
  TRACE_JSON_TRUE,
  TRACE_JSON_FALSE,
  TRACE_JSON_NULL
} trace_json_type;

typedef struct trace_json_token {
  trace_json_type type;
  size_t offset; /* byte offset of the token's first character */
  /* KEY and STRING: the decoded text, valid UTF-8 without NUL bytes, len
   * bytes long and not NUL-terminated. It points into the input or into the
   * parser's scratch buffer, so it is valid only until the next call. */
  const char *str;
  size_t len;
  double num;      /* NUMBER: the value, finite */
  int64_t integer; /* NUMBER: the value when is_integer */
  int is_integer;  /* NUMBER written without fraction or exponent, and
                      within int64 */
} trace_json_token;

typedef struct trace_json {
  const unsigned char *buf;
  size_t len, pos;
  int depth;
  int state;
  unsigned char stack[TRACE_JSON_MAX_DEPTH]; /* '{' or '[' per open level */
  char *scratch;
  size_t scratch_cap;
  int failed;
  size_t error_offset;
  char error[256];
} trace_json;

/* Starts reading buf[0, len). The buffer must outlive the parser. */
void trace_json_init(trace_json *j, const void *buf, size_t len);

/* Frees the scratch buffer. The parser may be initialised again. */
void trace_json_free(trace_json *j);

/* Reads the next token into t and returns its type. */
trace_json_type trace_json_next(trace_json *j, trace_json_token *t);

/* Passes over the rest of the value whose first token t was just read (for
 * an object or array, up to and including its end; for a scalar, nothing).
 * Returns 0, or -1 on an error. */
int trace_json_skip(trace_json *j, const trace_json_token *t);

/* Stops the parser with an error of the caller's, at byte offset (for a
 * trace file's wrong types and missing fields). Always returns -1. */
int trace_json_fail(trace_json *j, size_t offset, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The error message, "byte N (line L, column C): what", or "" when none. */
const char *trace_json_error(const trace_json *j);

/* 1 when t is a KEY or STRING equal to the NUL-terminated s. */
int trace_json_is(const trace_json_token *t, const char *s);

/* Length of the valid UTF-8 sequence at s[0, n) (n > 0), or 0 when it is
 * not one: overlong forms, UTF-16 surrogates and code points past U+10FFFF
 * are not. */
size_t trace_json_utf8_len(const unsigned char *s, size_t n);

/* The name of a token type, for messages: "a string", "an object", ... */
const char *trace_json_type_name(trace_json_type type);

#endif
