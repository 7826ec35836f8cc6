/* The cores this process may run on: what sizes the worker and executor
 * pools by default, and whether waiting threads may spin. */
#include "cpus.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>
#ifdef __linux__
#include <sched.h>
#endif

int weft__cpus_of_quota(long long quota, long long period) {
  if (quota <= 0 || period <= 0)
    return 0;
  long long n = quota / period + (quota % period != 0);
  return n < WEFT__MAX_THREADS ? (int)n : WEFT__MAX_THREADS;
}

/* The tighter of two quotas in CPUs, 0 meaning none. */
static int tighter(int a, int b) { return a == 0 || (b > 0 && b < a) ? b : a; }

/* dir/name into file; 0 if it does not fit. */
static int file_in(char *file, size_t size, const char *dir, const char *name) {
  int n = snprintf(file, size, "%s/%s", dir, name);
  return n > 0 && (size_t)n < size;
}

/* The CPUs that dir's own quota allows, 0 for none: cgroup v2's cpu.max
 * ("max 100000" or "150000 100000"), else v1's cpu.cfs_quota_us (-1 for
 * none) over cpu.cfs_period_us. */
static int quota_in(const char *dir) {
  char file[4096];
  long long quota = 0, period = 0;
  FILE *f =
      file_in(file, sizeof file, dir, "cpu.max") ? fopen(file, "r") : NULL;
  if (f) {
    char q[32] = "";
    if (fscanf(f, "%31s %lld", q, &period) == 2 && strcmp(q, "max") != 0)
      sscanf(q, "%lld", &quota);
    fclose(f);
    return weft__cpus_of_quota(quota, period);
  }
  if (!file_in(file, sizeof file, dir, "cpu.cfs_quota_us") ||
      (f = fopen(file, "r")) == NULL)
    return 0;
  int got = fscanf(f, "%lld", &quota);
  fclose(f);
  if (got != 1 || !file_in(file, sizeof file, dir, "cpu.cfs_period_us") ||
      (f = fopen(file, "r")) == NULL)
    return 0;
  got = fscanf(f, "%lld", &period);
  fclose(f);
  return got == 1 ? weft__cpus_of_quota(quota, period) : 0;
}

/* The tightest quota from mount/path up to mount itself (a parent's quota
 * bounds its children's). Inside a cgroup namespace the path may not
 * exist under the mount: then the mount's own directory is the group. */
static int quota_up_from(const char *mount, const char *path) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s%s", mount, path);
  if (access(dir, F_OK) != 0)
    snprintf(dir, sizeof dir, "%s", mount);
  size_t floor = strlen(mount);
  int best = 0;
  for (;;) {
    best = tighter(best, quota_in(dir));
    char *slash = strrchr(dir, '/');
    if (!slash || (size_t)(slash - dir) < floor)
      break;
    *slash = '\0';
  }
  return best;
}

/* Whether the comma-separated list names the controller cpu. */
static int names_cpu(const char *list) {
  for (const char *p = list;; p++) {
    if (strncmp(p, "cpu", 3) == 0 && (p[3] == ',' || p[3] == '\0'))
      return 1;
    if ((p = strchr(p, ',')) == NULL)
      return 0;
  }
}

/* One line of /proc/self/cgroup, id:controllers:path (v2's is 0::path):
 * its group's quota, 0 for none. */
static int line_quota(char *line, const char *root) {
  char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
  if (!c2)
    return 0;
  *c1 = *c2 = '\0';
  const char *ctl = c1 + 1, *path = c2 + 1;
  if (strcmp(line, "0") == 0 && *ctl == '\0')
    return quota_up_from(root, path);
  if (!names_cpu(ctl))
    return 0;
  /* v1: the cpu controller, mounted alone or with cpuacct. */
  char mount[4096];
  snprintf(mount, sizeof mount, "%s/%s", root, ctl);
  if (access(mount, F_OK) != 0)
    snprintf(mount, sizeof mount, "%s/cpu", root);
  return quota_up_from(mount, path);
}

int weft__cpus_quota(const char *cgroups, const char *root) {
  int best = 0;
  for (const char *line = cgroups; line && *line;) {
    const char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line);
    char buf[4096];
    if (len < sizeof buf) {
      memcpy(buf, line, len);
      buf[len] = '\0';
      best = tighter(best, line_quota(buf, root));
    }
    line = end ? end + 1 : NULL;
  }
  return best;
}

/* The quota of the process's own control groups, 0 for none. */
static int own_quota(void) {
#ifdef __linux__
  FILE *f = fopen("/proc/self/cgroup", "r");
  if (!f)
    return 0;
  char text[16384];
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = '\0';
  return weft__cpus_quota(text, "/sys/fs/cgroup");
#else
  return 0;
#endif
}

int weft__cpus_available(void) {
  int n = 0;
#ifdef __linux__
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    n = CPU_COUNT(&set);
#endif
  if (n <= 0) {
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    n = online > 0 ? (int)online : 1;
  }
  n = tighter(n, own_quota());
  return n < WEFT__MAX_THREADS ? n : WEFT__MAX_THREADS;
}
