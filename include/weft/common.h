/* Shared declarations for every weft header: export macro and C++ guards.
 *
 * Each public function's comment has an "Errors:" line (the codes it
 * returns and when; the terms are in weft/error.h) and a "Context:" line,
 * which says where it may be called and what it does to the caller:
 * - any thread: callable from a task or from a plain (non-task) thread;
 * - task only / plain thread only: callable only there; the other side
 *   gets WEFT_ESTATE;
 * - may switch: in a task, the call can suspend the task (switch its fiber
 *   out) while its worker runs other tasks, and the task may resume on
 *   another worker thread; on a plain thread the same wait blocks it;
 * - blocks the worker: the call can block the calling OS thread (in a task,
 *   its worker, which then runs no other task) on the device or on a
 *   condition variable;
 * - never blocks: the call returns without waiting for the device, another
 *   task or a condition variable; it may take a lock briefly. */
#ifndef WEFT_COMMON_H
#define WEFT_COMMON_H

#include <stddef.h>
#include <stdint.h>

#if defined(WEFT_STATIC_DEFINE)
#define WEFT_API
#elif defined(__GNUC__)
#define WEFT_API __attribute__((visibility("default")))
#else
#define WEFT_API
#endif

#ifdef __cplusplus
#define WEFT_BEGIN_DECLS extern "C" {
#define WEFT_END_DECLS }
#else
#define WEFT_BEGIN_DECLS
#define WEFT_END_DECLS
#endif

#define WEFT_VERSION_MAJOR 0
#define WEFT_VERSION_MINOR 1
#define WEFT_VERSION_PATCH 0
#define WEFT_VERSION_STRING "0.1.0"

#endif
