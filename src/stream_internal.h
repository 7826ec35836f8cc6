/* What stream.c offers the rest of the library: a wait for the calling
 * task's stream during which a lease may take that stream over. */
#ifndef WEFT__STREAM_INTERNAL_H
#define WEFT__STREAM_INTERNAL_H

/* weft_sync, but a task's stream is lent while it waits: a lease past
 * the streams made ahead may take it over, queueing its own work behind
 * the task's, and the task leases another for what it issues next. Only
 * for weft's own tasks, which keep no stream of theirs across the wait
 * (a program's may, in a weft_stream_current or library handle);
 * docs/decisions/data.md, "Write-backs lend their stream while they
 * wait". */
int weft__sync_lending(void);

#endif
