/* The scenarios of `weft bench`, in the order they run and are listed.
 * X(name) refers to `const bench_scenario bench_sc_<name>`, defined in
 * bench/sc_<name>.c; a new scenario is that file and one line here. An
 * FP64 twin (<name>_fp64, run as "<name>-fp64") shares its FP32
 * scenario's file and code. */
#ifndef WEFT_BENCH_SCENARIOS_H
#define WEFT_BENCH_SCENARIOS_H

#define BENCH_SCENARIOS(X)                                                     \
  X(start)                                                                     \
  X(switch)                                                                    \
  X(spawn)                                                                     \
  X(ranges)                                                                    \
  X(live)                                                                      \
  X(stream)                                                                    \
  X(library)                                                                   \
  X(launch)                                                                    \
  X(roundtrip)                                                                 \
  X(many)                                                                      \
  X(tasks)                                                                     \
  X(pinned)                                                                    \
  X(pageable)                                                                  \
  X(normalize)                                                                 \
  X(copies)                                                                    \
  X(priority)                                                                  \
  X(saturation)                                                                \
  X(graph)                                                                     \
  X(dataflow)                                                                  \
  X(dataflow_fp64)                                                             \
  X(data)                                                                      \
  X(cholesky)                                                                  \
  X(cholesky_fp64)                                                             \
  X(multigpu)                                                                  \
  X(scale)                                                                     \
  X(trace)                                                                     \
  X(explain)

#endif
