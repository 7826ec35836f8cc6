/* The cores this process may run on. */
#ifndef WEFT__CPUS_H
#define WEFT__CPUS_H

/* The most worker or executor threads of one kind weft starts
 * (WEFT_WORKERS, WEFT_HOST_THREADS), and so the most CPUs it counts. */
#define WEFT__MAX_THREADS 1024

/* The CPUs in the calling thread's affinity mask where the system says
 * (Linux), else the cores online, and no more than the process's control
 * groups' CPU quota allows, rounded up; 1 to WEFT__MAX_THREADS. Under an MPI
 * launcher that binds each rank to a core (Open MPI does for two ranks or
 * fewer), under taskset, in a container's cpuset or under its CPU limit (a
 * quota), it is fewer than the machine's. */
int weft__cpus_available(void);

/* The CPUs a quota of quota us every period us allows, rounded up; 0 for
 * no quota (quota or period not positive). */
int weft__cpus_of_quota(long long quota, long long period);

/* The tightest CPU quota of the control groups that cgroups (the text of
 * /proc/self/cgroup) names, under the cgroup file systems mounted at root
 * (v2 at root itself, v1's cpu controller at root/cpu or
 * root/cpu,cpuacct), each group's ancestors included; 0 for none. */
int weft__cpus_quota(const char *cgroups, const char *root);

#endif
