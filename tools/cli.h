/* Shared pieces of the weft command-line tool: the command signature, the
 * global options, and small helpers for flags, errors and opening a runtime.
 *
 * Exit codes of every command: 0 success, 1 the work failed (a weft call
 * failed or a result check did not pass), 2 bad usage. */
#ifndef WEFT_CLI_H
#define WEFT_CLI_H

#include <stddef.h>

#include "weft.h"

enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2 };

/* Options given before the command, or to a command that takes them. */
typedef struct cli_global {
  weft_backend_kind backend; /* from --backend, else WEFT_BACKEND, else auto */
  int backend_from_flag;     /* 1 when --backend was given */
} cli_global;

/* A command gets the global options and its own arguments; argv[0] is the
 * command's name. It returns the process exit code. */
typedef int (*cli_command_fn)(cli_global *g, int argc, char **argv);

typedef struct cli_command {
  const char *name;
  cli_command_fn run;
  const char *args;    /* argument synopsis for the usage text */
  const char *summary; /* one line */
  const char *details; /* option descriptions, or NULL */
} cli_command;

int cmd_info(cli_global *g, int argc, char **argv);
int cmd_demo(cli_global *g, int argc, char **argv);
int cmd_bench(cli_global *g, int argc, char **argv);
int cmd_trace(cli_global *g, int argc, char **argv);

/* Prints "weft: <message> (try 'weft help')" as one line on stderr and
 * returns CLI_USAGE. */
int cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Reports an argument cmd does not take, as cli_usage_error does. */
int cli_bad_arg(const char *cmd, const char *arg);

/* Prints "weft <cmd>: <message>" on stderr and returns CLI_FAIL. */
int cli_fail(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Prints the usage of one command to stdout. */
void cli_print_command_help(const char *name);

/* Matches argv[*i] against a flag taking a value, written "--flag VALUE" or
 * "--flag=VALUE". Returns 1 and sets *value (advancing *i past a separate
 * value) on a match, 0 when argv[*i] is another argument, and -CLI_USAGE,
 * after printing the error, when the value is missing or empty. */
int cli_flag_value(int argc, char **argv, int *i, const char *flag,
                   const char **value);

/* Parses a decimal integer in [lo, hi] given to flag. Returns 0, or prints
 * the error and returns CLI_USAGE. */
int cli_parse_long(const char *flag, const char *text, long lo, long hi,
                   long *out);

/* Handles the options every device command accepts (today --backend).
 * Returns 1 when argv[*i] was one of them (consumed), 0 when not, or
 * -CLI_USAGE after printing an error. */
int cli_common_flag(cli_global *g, int argc, char **argv, int *i);

/* Opens a runtime on the backend g asks for. For auto, tries CUDA first (when
 * built) and falls back to the host backend; why CUDA was not used is then
 * written to why (empty when CUDA was used or not asked for). On failure
 * prints the reason, prefixed by cmd, and returns CLI_FAIL. */
int cli_open_runtime(const cli_global *g, const char *cmd, weft_runtime **rt,
                     char *why, size_t why_size);

#endif
