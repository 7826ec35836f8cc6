/* weft: task-parallel GPU programming on CUDA, with a CPU backend.
 *
 * Thread safety: every weft function may be called from any thread or task
 * at the same time as any other, unless its comment says otherwise. A
 * handle must not be used while, or after, another thread destroys it.
 *
 * Errors: functions return 0 or a negative WEFT_E* code (weft/error.h). */
#ifndef WEFT_H
#define WEFT_H

#include "weft/common.h"
#include "weft/data.h"
#include "weft/dataflow.h"
#include "weft/device.h"
#include "weft/error.h"
#include "weft/event.h"
#include "weft/graph.h"
#include "weft/host.h"
#include "weft/kernel.h"
#include "weft/library.h"
#include "weft/memory.h"
#include "weft/pipeline.h"
#include "weft/range.h"
#include "weft/runtime.h"
#include "weft/stream.h"
#include "weft/task.h"

#endif
