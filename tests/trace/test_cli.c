/* `weft trace report`, `explain` and `svg` from the command line: output,
 * exit codes (0 success, 1 failure, 2 usage) and one-line errors; several
 * files (or a directory of them) reported per rank and in total.
 * Arguments: the weft binary and the folder of sample traces. */
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "trace_test.h"

static const char *weft, *data;
static char dir[] = "/tmp/weft_trace_cli_XXXXXX";

/* Runs "weft ARGS", stdout to out.txt and stderr to err.txt in dir; returns
 * the exit code. */
static int run(const char *args) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "cd '%s' && '%s' %s >out.txt 2>err.txt", dir, weft,
           args);
  int status = system(cmd);
  EXPECT(status != -1 && WIFEXITED(status));
  return WEXITSTATUS(status);
}

static char *slurp(const char *name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "rb");
  EXPECT_MSG(f != NULL, "no %s", path);
  static char buf[1 << 20];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

/* stderr is exactly one line starting with prefix. */
static void one_line_error(const char *prefix) {
  const char *err = slurp("err.txt");
  EXPECT_MSG(!strncmp(err, prefix, strlen(prefix)), "stderr: %s", err);
  const char *nl = strchr(err, '\n');
  EXPECT_MSG(nl && nl[1] == '\0', "not one line: %s", err);
}

int main(int argc, char **argv) {
  EXPECT(argc == 3);
  weft = argv[1];
  data = argv[2];
  EXPECT(mkdtemp(dir) != NULL);
  char args[4096];

  snprintf(args, sizeof args, "trace report '%s/two_streams.json'", data);
  EXPECT_EQ_INT(run(args), 0);
  EXPECT_HAS(slurp("out.txt"), "25.0 % of busy time");

  snprintf(args, sizeof args,
           "trace report --json --top 1 '%s/pytorch_sample.json'", data);
  EXPECT_EQ_INT(run(args), 0);
  EXPECT_HAS(slurp("out.txt"), "\"schema\": \"weft-trace-report/1\"");

  /* --range: the figures inside PyTorch's ProfilerStep#1 range; a name
   * the trace lacks is a usage error listing the names it has. */
  snprintf(args, sizeof args,
           "trace report --range 'ProfilerStep#1' '%s/pytorch_sample.json'",
           data);
  EXPECT_EQ_INT(run(args), 0);
  EXPECT_HAS(slurp("out.txt"), "inside range 'ProfilerStep#1': 1 range");
  snprintf(args, sizeof args,
           "trace report --range nope '%s/pytorch_sample.json'", data);
  EXPECT_EQ_INT(run(args), 2);
  one_line_error("weft: ");
  EXPECT_HAS(slurp("err.txt"), "no range named 'nope'; its range: "
                               "'ProfilerStep#1'");
  snprintf(args, sizeof args,
           "trace explain --range 'ProfilerStep#1' '%s/pytorch_sample.json'",
           data);
  EXPECT_EQ_INT(run(args), 0);
  EXPECT_HAS(slurp("out.txt"), "verdict: ");
  snprintf(args, sizeof args,
           "trace explain --range nope '%s/pytorch_sample.json'", data);
  EXPECT_EQ_INT(run(args), 2);
  /* Several files, a later one without the range: its reports are out
   * already, so it is a failure naming the file, not bad usage. */
  snprintf(args, sizeof args,
           "trace report --range 'ProfilerStep#1' '%s/pytorch_sample.json' "
           "'%s/two_streams.json'",
           data, data);
  EXPECT_EQ_INT(run(args), 1);
  one_line_error("weft trace: ");
  EXPECT_HAS(slurp("err.txt"), "two_streams.json has no range named");

  snprintf(args, sizeof args, "trace report - < '%s/weft_tasks.json'", data);
  EXPECT_EQ_INT(run(args), 0);
  EXPECT_HAS(slurp("out.txt"), "compute");

  snprintf(args, sizeof args, "trace explain '%s/two_streams.json'", data);
  EXPECT_EQ_INT(run(args), 0);
  EXPECT_HAS(slurp("out.txt"), "verdict: ");
  snprintf(args, sizeof args,
           "trace explain --json --top 1 '%s/weft_tasks.json'", data);
  EXPECT_EQ_INT(run(args), 0);
  EXPECT_HAS(slurp("out.txt"), "\"schema\": \"weft-trace-explain/1\"");
  EXPECT_EQ_INT(run("trace explain a.json b.json"), 2);
  EXPECT_EQ_INT(run("trace explain missing.json"), 1);

  snprintf(args, sizeof args,
           "trace svg '%s/two_streams.json' -o out.svg --width 900", data);
  EXPECT_EQ_INT(run(args), 0);
  EXPECT(!strncmp(slurp("out.svg"), "<?xml", 5));

  EXPECT_EQ_INT(run("help trace"), 0);
  EXPECT_HAS(slurp("out.txt"), "usage: weft trace");

  /* Usage errors: 2, one line. */
  EXPECT_EQ_INT(run("trace"), 2);
  one_line_error("weft: ");
  EXPECT_EQ_INT(run("trace frob x.json"), 2);
  one_line_error("weft: unknown 'trace' subcommand");
  EXPECT_EQ_INT(run("trace report"), 2);
  one_line_error("weft: 'trace report' needs a trace FILE");
  EXPECT_EQ_INT(run("trace svg a.json b.json -o x.svg"), 2);
  EXPECT_EQ_INT(run("trace check a.json b.json"), 2);
  EXPECT_EQ_INT(run("trace report --frob a.json"), 2);
  one_line_error("weft: unknown option '--frob'");
  EXPECT_EQ_INT(run("trace svg a.json"), 2);
  one_line_error("weft: 'trace svg' needs -o OUT.svg");
  EXPECT_EQ_INT(run("trace svg a.json -o x.svg --width 10"), 2);
  EXPECT_EQ_INT(run("trace report --top 0 a.json"), 2);
  EXPECT_EQ_INT(run("trace report --top 99999999999999999999 a.json"), 2);
  one_line_error("weft: option '--top': 99999999999999999999 is out of "
                 "range");
  EXPECT_EQ_INT(run("trace svg a.json --json -o x.svg"), 2);

  /* Failures: 1, one line naming the file and what went wrong. */
  EXPECT_EQ_INT(run("trace report missing.json"), 1);
  one_line_error("weft trace: missing.json: cannot open");
  EXPECT_EQ_INT(run("trace report missing.json other.json"), 1);
  one_line_error("weft trace: missing.json: cannot open");
  FILE *f = fopen(strcat(strcpy(args, dir), "/bad.json"), "w");
  EXPECT(f != NULL);
  fputs("{\"traceEvents\": [{\"ph\": \"X\", \"ts\": 1e999}]}", f);
  fclose(f);
  EXPECT_EQ_INT(run("trace report bad.json"), 1);
  one_line_error("weft trace: bad.json: byte 35 (line 1, column 36): number "
                 "out of range");
  EXPECT_EQ_INT(run("trace svg bad.json -o bad.svg"), 1);
  EXPECT(access(strcat(strcpy(args, dir), "/bad.svg"), F_OK) != 0);
  /* A failed write leaves the path as it was: a file already there keeps
   * its bytes, a link stays (the path used to be removed, whatever it
   * was), and no temporary is left beside it. */
  f = fopen(strcat(strcpy(args, dir), "/kept.svg"), "w");
  EXPECT(f != NULL);
  fputs("kept", f);
  fclose(f);
  EXPECT_EQ_INT(run("trace svg bad.json -o kept.svg"), 1);
  EXPECT(!strcmp(slurp("kept.svg"), "kept"));
  if (access("/dev/full", W_OK) == 0) {
    snprintf(args, sizeof args, "%s/full.svg", dir);
    EXPECT(symlink("/dev/full", args) == 0);
    snprintf(args, sizeof args, "trace svg '%s/two_streams.json' -o full.svg",
             data);
    EXPECT_EQ_INT(run(args), 1);
    one_line_error("weft trace: writing full.svg failed");
    struct stat st;
    snprintf(args, sizeof args, "%s/full.svg", dir);
    EXPECT(lstat(args, &st) == 0 && S_ISLNK(st.st_mode));
  }
  snprintf(args, sizeof args, "ls '%s' | grep -q '[.]svg[.]'", dir);
  EXPECT_MSG(system(args) != 0, "a temporary file was left in %s", dir);

  /* check: an older weft trace without rank and launch arrows fails,
   * listing what is missing. */
  snprintf(args, sizeof args, "trace check '%s/weft_tasks.json'", data);
  EXPECT_EQ_INT(run(args), 1);
  EXPECT(strstr(slurp("out.txt"), "rank:") != NULL);
  EXPECT(strstr(slurp("out.txt"), "flows:") != NULL);
  one_line_error("weft trace: ");

  /* check fails a trace Perfetto would not keep whole, naming the track
   * and the first offending events: tids beyond 32 bits (weft's old wait
   * lanes), slices overlapping without nesting on a CPU or a GPU track;
   * and one HTA cannot load (a bare array). */
  snprintf(args, sizeof args, "trace check '%s/check/wide_tids.json'", data);
  EXPECT_EQ_INT(run(args), 1);
  EXPECT_HAS(slurp("out.txt"), "tids: 2 events with a pid or tid beyond 32 "
                               "bits, the first 'thread_name' on pid 100 tid "
                               "4294967297");
  snprintf(args, sizeof args, "trace check '%s/check/overlap.json'", data);
  EXPECT_EQ_INT(run(args), 1);
  EXPECT_HAS(slurp("out.txt"),
             "overlap: on track pid 100 tid 1073741824 (waits: load), 'wait: "
             "weft_wait_until' at 25.000 us ends 15.000 us after 'wait: GPU' "
             "(10.000 to 30.000 us)");
  snprintf(args, sizeof args, "trace check '%s/check/overlap_gpu.json'", data);
  EXPECT_EQ_INT(run(args), 1);
  EXPECT_HAS(slurp("out.txt"), "overlap: on track pid 0 tid 7, "
                               "'scale' at 20.000 us ends 20.000 us after "
                               "'gemm' (0.000 to 30.000 us)");
  snprintf(args, sizeof args, "trace check '%s/check/bare_array.json'", data);
  EXPECT_EQ_INT(run(args), 1);
  EXPECT_HAS(slurp("out.txt"), "format: a bare array of events");

  /* The PyTorch profiler's own trace outside a distributed job has no
   * distributedInfo, which HTA does without (rank 0): a note, no problem. */
  snprintf(args, sizeof args, "trace check '%s/check/pytorch_no_rank.json'",
           data);
  EXPECT_EQ_INT(run(args), 0);
  EXPECT_HAS(slurp("out.txt"), "note: rank: no \"distributedInfo\"");
  EXPECT_HAS(slurp("out.txt"), "ok: 5 operations, 1 launch arrows");
  snprintf(args, sizeof args, "trace check '%s/pytorch_sample.json'", data);
  EXPECT_EQ_INT(run(args), 1); /* for its planted faults, not the rank */
  EXPECT(strstr(slurp("out.txt"), "\nrank:") == NULL);
  EXPECT(strncmp(slurp("out.txt"), "rank:", 5) != 0);

  /* Several files, one per rank: each file's report, then every rank's
   * row and the total; a directory of them reads the same; --json takes
   * one file; an empty directory is an error. */
  snprintf(args, sizeof args,
           "trace report '%s/two_streams.json' '%s/weft_tasks.json'", data,
           data);
  EXPECT_EQ_INT(run(args), 0);
  EXPECT_HAS(slurp("out.txt"), "==== every rank:");
  EXPECT_HAS(slurp("out.txt"), "two_streams.json");
  EXPECT_HAS(slurp("out.txt"), "  all ");
  snprintf(args, sizeof args, "trace report '%s'", data);
  EXPECT_EQ_INT(run(args), 0);
  EXPECT_HAS(slurp("out.txt"), "pytorch_sample.json");
  EXPECT_HAS(slurp("out.txt"), "==== every rank:");
  snprintf(args, sizeof args,
           "trace report --json '%s/two_streams.json' '%s/weft_tasks.json'",
           data, data);
  EXPECT_EQ_INT(run(args), 2);
  EXPECT_EQ_INT(run("trace report ."), 1); /* dir: out.txt and err.txt only */
  one_line_error("weft trace: ");

  /* An endless input is refused once past the limit, in one line. */
  EXPECT(setenv("WEFT_TRACE_MAX_MIB", "1", 1) == 0);
  EXPECT_EQ_INT(run("trace report /dev/zero"), 1);
  one_line_error("weft trace: /dev/zero: input larger than 1 MiB");
  /* A file known to be larger is refused unread (it was read whole
   * first). */
  snprintf(args, sizeof args, "truncate -s 3M '%s/big.json'", dir);
  if (system(args) == 0) {
    EXPECT_EQ_INT(run("trace report big.json"), 1);
    one_line_error("weft trace: big.json: input larger than 1 MiB");
  }
  /* A limit that is no whole number of MiB is refused, naming it. */
  const char *bad[] = {"0", "1.5", "abc", "-1", "1099511627776"};
  for (int i = 0; i < 5; i++) {
    EXPECT(setenv("WEFT_TRACE_MAX_MIB", bad[i], 1) == 0);
    snprintf(args, sizeof args, "trace report '%s/two_streams.json'", data);
    EXPECT_EQ_INT(run(args), 1);
    one_line_error("weft trace: ");
    EXPECT_HAS(slurp("err.txt"), "WEFT_TRACE_MAX_MIB=");
    EXPECT_HAS(slurp("err.txt"), bad[i]);
  }
  EXPECT(unsetenv("WEFT_TRACE_MAX_MIB") == 0);

  /* Output lost (stdout a full device): a failure, said on stderr, where
   * the verdict went nowhere (it used to exit 0). */
  if (access("/dev/full", W_OK) == 0) {
    snprintf(args, sizeof args,
             "'%s' trace check '%s/weft_tasks.json' >/dev/full 2>/dev/null",
             weft, data);
    int status = system(args);
    EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 1);
    snprintf(args, sizeof args, "'%s' version >/dev/full 2>/dev/null", weft);
    status = system(args);
    EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 1);
  }
  /* A bad WEFT_BACKEND stops only what opens a runtime: not help, not
   * trace. */
  EXPECT(setenv("WEFT_BACKEND", "gpu", 1) == 0);
  EXPECT_EQ_INT(run("help"), 0);
  snprintf(args, sizeof args, "trace report '%s/two_streams.json'", data);
  EXPECT_EQ_INT(run(args), 0);
  EXPECT_EQ_INT(run("info"), 2);
  one_line_error("weft: WEFT_BACKEND='gpu' is not host, cuda or auto");
  EXPECT(unsetenv("WEFT_BACKEND") == 0);
  /* Extra arguments are refused, not ignored. */
  EXPECT_EQ_INT(run("--version extra"), 2);
  EXPECT_EQ_INT(run("--help bogus"), 2);
  /* The demo reads its trace back: "-" (stdin) and %r are refused. */
  EXPECT_EQ_INT(run("demo --trace -"), 2);
  one_line_error("weft: demo --trace needs a plain file name");
  EXPECT_EQ_INT(run("demo --trace 'r%r.json'"), 2);

  snprintf(args, sizeof args, "rm -rf '%s'", dir);
  EXPECT(system(args) == 0);
  printf("cli: ok\n");
  return 0;
}
