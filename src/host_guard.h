/* Pages of registered host memory that the CPU must not touch, for weft
 * check: while a device holds a handle's only valid copy, the whole pages
 * of its host range are protected, and the first CPU load or store there
 * faults into weft's SIGSEGV handler (fiber.c), which reports it, opens
 * the pages again and lets the access go on; while the host and a device
 * both hold valid copies, the pages are read-only and a store is reported
 * (docs/decisions/checker.md, "A CPU load of stale registered data").
 * Beneath everything: it calls nothing of weft's. */
#ifndef WEFT__HOST_GUARD_H
#define WEFT__HOST_GUARD_H

#include <signal.h>
#include <stddef.h>

/* The SIGSEGV handler that sends faults here (fiber.c's); guards are put
 * up only while it is the one installed, so that a sanitizer's or the
 * program's handler never meets a fault of weft's making. */
void weft__guard_enable(void (*handler)(int, siginfo_t *, void *));

/* The protection (PROT_* bits) that every whole page of [base, base +
 * bytes) has, as /proc/self/maps says, or -1 where there is no whole
 * page, a page is not mapped or the file cannot be read. Asked once a
 * handle: what weft__guard_on must leave the pages with again. */
int weft__guard_prot(const void *base, size_t bytes);

/* Protects the whole pages of [base, base + bytes), whose protection is
 * prot (weft__guard_prot), a handle with a valid copy on device dev, a
 * finding to be written to fd when touched: against every access, or with
 * reads_ok against stores only (the host's copy is valid too). The pages
 * get prot back when opened. Returns the guard's slot, or -1 where nothing
 * was protected (no whole page, prot unknown or already refusing what the
 * guard would, no slot left, the handler not installed, mprotect
 * refused): fewer findings, never a false one. */
int weft__guard_on(const void *base, size_t bytes, int prot, int dev, int fd,
                   int reads_ok);

/* Opens slot's pages again; returns 1 if a CPU access faulted in them
 * since weft__guard_on (reported then), else 0. */
int weft__guard_off(int slot);

/* Nonzero while this thread copies for a weft operation (the host
 * backend's executors, a staged copy's host half): a fault of its opens
 * the pages without a report, the operation's own check having reported
 * it (one bug, one finding). */
extern _Thread_local int weft__guard_quiet;

/* From the SIGSEGV handler: if addr lies in guarded pages, reports the
 * access (by who, a task's name or NULL for a plain thread; store 1, 0,
 * or -1 where the fault does not say), opens the pages and returns 1,
 * so that the access runs again; else 0. Async-signal-safe. */
int weft__guard_fault(const void *addr, int store, const char *who);

#endif
