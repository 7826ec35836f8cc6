/* Why the GPU ran less than it could have: `weft trace explain`. Each
 * stretch of a device's span in which it sat idle, or in which issued work
 * waited while an engine that could run it was free (or was held by
 * another op of its kind), is given one cause, from the records alone:
 * what was running, what had been issued and not started, which host call
 * or task stood between. docs/TRACE.md, "Explain", gives each rule. All
 * times are microseconds. */
#ifndef WEFT_TRACE_EXPLAIN_H
#define WEFT_TRACE_EXPLAIN_H

#include <stdio.h>

#include "model.h"

/* The causes, in the order of the table. X(CAUSE, name, what it means). */
#define TRACE_CAUSES(X)                                                        \
  X(ORDERED, "ordered on purpose",                                             \
    "issued work waited for another stream's work, or behind the work of "     \
    "the task that handed it its stream (a declared dependence)")              \
  X(IMPLICIT_SYNC, "implicit synchronisation",                                 \
    "a device-wide wait (allocation, free, blocking copy or memset, device "   \
    "sync) held every stream")                                                 \
  X(ONE_STREAM, "one stream",                                                  \
    "issued work waited behind earlier work of its own stream while an "       \
    "engine that could run it was free")                                       \
  X(TAKEOVER, "a stream taken over",                                           \
    "issued work waited behind another task's work on a stream weft took "     \
    "over from that task, past the streams made ahead (WEFT_STREAMS)")         \
  X(HOST_SLOW, "the host issued too slowly",                                   \
    "the GPU was idle and its next operation had not been issued yet, or "     \
    "issued work waited no longer than the device's launch latency")           \
  X(GPU_FULL, "the GPU was full",                                              \
    "issued work waited on a free stream while the device ran all it can "     \
    "at once (kernels whose blocks filled every SM; the host backend's "       \
    "executors), or beside other work with nothing recorded holding it")       \
  X(HW_QUEUE, "one hardware queue",                                            \
    "an issued kernel waited on a free stream, the device not full, behind "   \
    "another stream's kernel on the same hardware channel (streams share "     \
    "CUDA_DEVICE_MAX_CONNECTIONS queues)")                                     \
  X(COPY_ENGINE, "copy engines",                                               \
    "an issued copy waited behind another copy in the same direction")         \
  X(WEFT, "weft's own cost",                                                   \
    "the GPU was idle while the task that issued next was ready but not "      \
    "running, or waited for work that had already completed")

#define TRACE_CAUSE_ENUM(cause, name, what) TRACE_CAUSE_##cause,
typedef enum trace_cause {
  TRACE_CAUSES(TRACE_CAUSE_ENUM) TRACE_NCAUSES
} trace_cause;
#undef TRACE_CAUSE_ENUM

const char *trace_cause_name(trace_cause c);
const char *trace_cause_what(trace_cause c);
/* A short key for JSON: "ordered", "implicit_sync", ... */
const char *trace_cause_key(trace_cause c);

/* One stretch of lost time: the op held back (the earliest issued of
 * those waiting, or, on an idle GPU with nothing issued, the next to
 * start), and what held it (an op, an API call, a task slice), or
 * TRACE_NO_OP. sync: index in the model's syncs for IMPLICIT_SYNC found
 * by weft check, else SIZE_MAX. */
typedef struct trace_lost {
  double start, end;
  int64_t device;
  uint8_t cause; /* trace_cause */
  uint8_t idle;  /* the GPU ran nothing meanwhile */
  uint32_t op, by;
  size_t sync;
  /* Ordered on purpose: the index in the model's stream waits of the wait
   * that held op (by: the op it waited for); SIZE_MAX when no recorded
   * wait names it (a stream handed from task to task, or inferred from
   * the times). */
  size_t swait;
} trace_lost;

typedef struct trace_explanation {
  double t0;   /* the first GPU op's start: printed times count from it */
  double span; /* every device's span, summed */
  double busy; /* every device's busy time, summed */
  double idle; /* span - busy */
  double lost; /* all the causes' time */
  /* Of which with the GPU idle; the rest, issued work waiting while other
   * work ran. */
  double lost_idle;
  double cause[TRACE_NCAUSES];
  size_t count[TRACE_NCAUSES]; /* instances */
  trace_lost *lost_at;         /* by cause, then longest first */
  size_t nlost;
  int ndevices;
  /* The verdict: the cause with the most time, and for HOST_SLOW how many
   * tasks issuing side by side would keep the GPU busy (span / busy of
   * the devices, rounded up). */
  int top; /* trace_cause, or -1 when nothing was lost */
  int tasks_to_fill;
  /* Host threads whose calls issued the devices' ops: with as many as
   * tasks_to_fill, more tasks would not help and the verdict names a
   * graph. */
  int issuers;
  /* The devices' launch latency on an idle device (the largest), up to
   * which a kernel's wait on a busy device is the host's; 0 when no
   * device had enough ops that started idle to tell. */
  double launch_latency;
} trace_explanation;

/* Explains m into e. Returns 0, or -1 when out of memory. Free e with
 * trace_explanation_free either way. */
int trace_explain(const trace_model *m, trace_explanation *e);
void trace_explanation_free(trace_explanation *e);

typedef struct trace_explain_opts {
  const char *source; /* the file name shown */
  int json;           /* 1: JSON ("weft-trace-explain/1"), else text */
  int top;            /* instances shown per cause (default 3) */
} trace_explain_opts;

/* The verdict's line, into out: 0, or -1 when it did not fit. */
int trace_explain_verdict(const trace_explanation *e, char *out, size_t n);

/* Prints the table of lost time by cause, the top instances of each with
 * their tasks and times, and the verdict. 0, or -1 when writing failed. */
int trace_explain_print(FILE *f, const trace_model *m,
                        const trace_explanation *e,
                        const trace_explain_opts *o);

#endif
