/* What the words of a trace mean to the reader: an op's kind from its
 * category, a copy's direction and host memory from its args or its name.
 * The words themselves are the trace format's (format/trace_format.h), shared
 * with weft's tracer. */
#ifndef WEFT_TRACE_CLASSIFY_H
#define WEFT_TRACE_CLASSIFY_H

#include "model.h"

/* The kind of an op of category cat (compared without case). */
trace_op_kind trace_classify_cat(const char *cat);

/* A copy's direction from args.direction (compared without case). */
trace_copy_dir trace_classify_dir_arg(const char *direction);

/* A copy's direction from its name, as Kineto writes it ("Memcpy HtoD
 * (Pageable -> Device)"). */
trace_copy_dir trace_classify_dir_name(const char *name);

/* The host memory of a copy, from its name. */
trace_host_mem trace_classify_host_mem(const char *name);

#endif
