/* The cores this process may run on. */
#ifndef WEFT__CPUS_H
#define WEFT__CPUS_H

/* The CPUs in the calling thread's affinity mask where the system says
 * (Linux), else the cores online; at least 1. Under an MPI launcher that
 * binds each rank to a core (Open MPI does for two ranks or fewer), under
 * taskset or in a container's cpuset, it is fewer than the machine's. */
int weft__cpus_available(void);

#endif
