/* What every conformance test shares: opening the backend under test,
 * closing it with a leak check, random data, clocks, and a "gate" (a
 * spin_until kernel) that holds a stream busy until the test releases it.
 *
 * The backend is chosen by the environment variable WEFT_BACKEND (host or
 * cuda; host when unset), so one test program runs against every backend.
 * A backend that is not built, or has no device, skips the test (exit 77). */
#ifndef WEFT_TEST_COMMON_H
#define WEFT_TEST_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "expect.h"
#include "kernels.h"
#include "weft_internal.h"

/* The kernels, filled by conf_open. */
extern test_kernels tk;

/* Opens the backend named by WEFT_BACKEND. host_threads > 0 forces the host
 * backend's executor thread count; 0 takes WEFT_HOST_THREADS, if set, or the
 * backend's default. Exits 77 when the backend is absent. */
weft__backend *conf_open(int host_threads);
/* Checks that no stream, event or allocation is left, then closes. */
void conf_close(weft__backend *b);

weft_backend_kind conf_kind(const weft__backend *b);
const weft_device_info *conf_info(const weft__backend *b);

/* A device round trip of a few bytes on s: fails the test unless the
 * backend still works (used after provoking errors). */
void conf_check_works(weft__stream *s);

/* Seeded xorshift64; conf_fill_random writes bytes in 1..255, never 0, so
 * a byte left untouched by a copy is always noticed. */
uint64_t conf_rand(uint64_t *state);
void conf_fill_random(void *p, size_t n, uint64_t *state);

int64_t conf_now_ns(void);
void conf_sleep_ms(int ms);
/* Queries e until it completes or timeout_ms passes; returns the last
 * query's result (0, WEFT_EAGAIN, or an error). */
int conf_poll_event(weft__event *e, int timeout_ms);

/* A spin_until kernel and its flag/state words in pinned memory. */
typedef struct conf_gate {
  weft__backend *b;
  int *mem; /* mem[0]: the flag the test sets; mem[1]: the kernel's state */
} conf_gate;

/* How long a gate spins before it gives up, so a broken backend cannot
 * hang the test (CTest's timeout is 60 s). */
#define CONF_GATE_TIMEOUT_NS (15LL * 1000000000LL)

void conf_gate_init(weft__backend *b, conf_gate *g);
/* Closes the gate and queues the spin on s; the previous spin (if any)
 * must have finished. */
void conf_gate_launch(conf_gate *g, weft__stream *s);
/* Waits (up to 5 s) until the spin kernel is running. */
void conf_gate_wait_started(conf_gate *g);
void conf_gate_open(conf_gate *g);
int conf_gate_state(const conf_gate *g); /* TEST_SPIN_* */
void conf_gate_fini(conf_gate *g);

#endif
