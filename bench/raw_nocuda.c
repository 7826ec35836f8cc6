/* A build without CUDA: the raw CUDA baselines are not built. Only the
 * CUDA backend asks for them, and such a build has none; open says why
 * should anything ask. */
#include <stdio.h>

#include "raw.h"

static int nocuda_open(weft_runtime *rt, bench_raw **out, char *err,
                       size_t errlen) {
  (void)rt;
  (void)out;
  snprintf(err, errlen, "raw CUDA baselines: not built (WEFT_WITH_CUDA=OFF)");
  return -1;
}

const bench_raw_ops bench_raw_cuda = {.open = nocuda_open};
