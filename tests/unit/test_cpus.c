/* The CPU count's parts: a quota rounded up to CPUs, and the control
 * groups' quotas found from /proc/self/cgroup's text in a made-up cgroup
 * tree (v2 and v1, a parent's quota bounding a child, a path that a
 * cgroup namespace hides), and the count itself within the machine's. */
#define _GNU_SOURCE /* mkdtemp, sched_getaffinity */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "expect.h"
#include "weft_internal.h"

static char root[64];

static void put(const char *rel, const char *text) {
  char path[256];
  snprintf(path, sizeof path, "%s/%s", root, rel);
  /* Every directory on the way. */
  for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')) != NULL; p++) {
    *p = '\0';
    mkdir(path, 0700);
    *p = '/';
  }
  FILE *f = fopen(path, "w");
  EXPECT(f != NULL);
  fputs(text, f);
  fclose(f);
}

int main(void) {
  EXPECT_EQ_INT(weft__cpus_of_quota(100000, 100000), 1);
  EXPECT_EQ_INT(weft__cpus_of_quota(150000, 100000), 2);
  EXPECT_EQ_INT(weft__cpus_of_quota(50000, 100000), 1);
  EXPECT_EQ_INT(weft__cpus_of_quota(400000, 100000), 4);
  EXPECT_EQ_INT(weft__cpus_of_quota(-1, 100000), 0);
  EXPECT_EQ_INT(weft__cpus_of_quota(100000, 0), 0);

  snprintf(root, sizeof root, "/tmp/weft-cpus-XXXXXX");
  EXPECT(mkdtemp(root) != NULL);
  /* v2: the parent allows 3, its child 6 (bounded by the parent's 3),
   * the grandchild none of its own. */
  put("a/cpu.max", "300000 100000\n");
  put("a/b/cpu.max", "600000 100000\n");
  put("a/b/c/cpu.max", "max 100000\n");
  EXPECT_EQ_INT(weft__cpus_quota("0::/a/b/c\n", root), 3);
  put("a/b/c/cpu.max", "150000 100000\n");
  EXPECT_EQ_INT(weft__cpus_quota("0::/a/b/c\n", root), 2);
  /* No quota on the way: none. */
  put("free/cpu.max", "max 100000\n");
  EXPECT_EQ_INT(weft__cpus_quota("0::/free\n", root), 0);
  /* A path hidden by a namespace: the mount's own group. */
  EXPECT_EQ_INT(weft__cpus_quota("0::/not/here\n", root), 0);
  put("cpu.max", "200000 100000\n");
  EXPECT_EQ_INT(weft__cpus_quota("0::/not/here\n", root), 2);
  /* v1: the cpu controller mounted with cpuacct, beside other lines. */
  put("cpu,cpuacct/job/cpu.cfs_quota_us", "50000\n");
  put("cpu,cpuacct/job/cpu.cfs_period_us", "100000\n");
  EXPECT_EQ_INT(weft__cpus_quota("4:memory:/job\n3:cpu,cpuacct:/job\n", root),
                1);
  put("cpu,cpuacct/job/cpu.cfs_quota_us", "-1\n");
  EXPECT_EQ_INT(weft__cpus_quota("3:cpu,cpuacct:/job\n", root), 0);
  /* Text that is not /proc/self/cgroup's: none. */
  EXPECT_EQ_INT(weft__cpus_quota("", root), 0);
  EXPECT_EQ_INT(weft__cpus_quota("nonsense\n:\n", root), 0);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  EXPECT(system(cmd) == 0);

  /* The count: at least 1, no more than the affinity mask or the most
   * threads weft starts. */
  int n = weft__cpus_available();
  cpu_set_t set;
  EXPECT(sched_getaffinity(0, sizeof set, &set) == 0);
  EXPECT_MSG(n >= 1 && n <= CPU_COUNT(&set) && n <= WEFT__MAX_THREADS,
             "%d CPUs available of %d", n, CPU_COUNT(&set));
  puts("ok");
  return 0;
}
