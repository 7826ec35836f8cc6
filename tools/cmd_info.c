/* weft info: which backends this build has, which one opens, what each of
 * its devices is, and how copies go between them. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static void row(const char *label, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void row(const char *label, const char *fmt, ...) {
  va_list ap;
  printf("%-22s", label);
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  putchar('\n');
}

static double gib(size_t bytes) {
  return (double)bytes / (1024.0 * 1024.0 * 1024.0);
}

/* CUDA writes versions as 1000 * major + 10 * minor. */
static void version_row(const char *label, int v) {
  if (v <= 0)
    row(label, "n/a");
  else
    row(label, "%d.%d (%d)", v / 1000, (v % 1000) / 10, v);
}

static void print_device(const weft_device_info *d) {
  int host = d->backend == WEFT_BACKEND_HOST;
  printf("\ndevice %d: %s\n", d->ordinal, d->name);
  if (host)
    row("  compute capability", "n/a (host backend)");
  else
    row("  compute capability", "%d.%d", d->cc_major, d->cc_minor);
  row(host ? "  executor threads" : "  multiprocessors", "%d",
      d->multiprocessors);
  row("  copy engines", "%d", d->copy_engines);
  row("  concurrent kernels", "%s, at most %d resident grids",
      d->concurrent_kernels ? "yes" : "no", d->max_resident_grids);
  row("  max threads/block", "%d", d->max_threads_per_block);
  if (d->max_threads_per_sm > 0)
    row("  max threads/SM", "%d", d->max_threads_per_sm);
  row("  stream priorities", "least %d, greatest %d", d->priority_least,
      d->priority_greatest);
  row(host ? "  memory (host)" : "  memory", "%.2f GiB total, %.2f GiB free",
      gib(d->memory_total), gib(d->memory_free));
  row("  unified addressing", "%s", d->unified_addressing ? "yes" : "no");
  version_row("  driver version", d->driver_version);
  version_row("  runtime version", d->runtime_version);
}

int cmd_info(cli_global *g, int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      cli_print_command_help("info");
      return CLI_OK;
    }
    int m = cli_common_flag(g, argc, argv, &i);
    if (m < 0)
      return -m;
    if (m == 0)
      return cli_bad_arg("info", argv[i]);
  }

  row("weft", "%s", WEFT_VERSION_STRING);
  row("backends built", "%s%s",
      weft_backend_built(WEFT_BACKEND_HOST) ? "host" : "",
      weft_backend_built(WEFT_BACKEND_CUDA) ? ", cuda" : "");

  weft_runtime *rt;
  char why[600];
  int rc = cli_open_runtime(g, "info", &rt, why, sizeof why);
  if (rc != CLI_OK)
    return rc;
  weft_backend_kind kind = weft_runtime_backend(rt);
  const char *how = g->backend == WEFT_BACKEND_AUTO
                        ? "auto"
                        : (g->backend_from_flag ? "--backend" : "WEFT_BACKEND");
  if (why[0])
    row("backend", "%s (%s; CUDA not used: %s)", weft_backend_name(kind), how,
        why);
  else
    row("backend", "%s (%s)", weft_backend_name(kind), how);

  int ndev = 0;
  rc = weft_device_count(rt, &ndev);
  if (rc == 0)
    row("devices", "%d", ndev);
  for (int d = 0; rc == 0 && d < ndev; d++) {
    weft_device_info info;
    rc = weft_device_get_info(rt, d, &info);
    if (rc == 0)
      print_device(&info);
  }
  /* How copies between each pair of devices go. */
  if (rc == 0 && ndev > 1) {
    printf("\ncopies between devices (D: device to device, S: staged through "
           "host memory)\n      ");
    for (int p = 0; p < ndev; p++)
      printf(" %3d", p);
    putchar('\n');
    for (int d = 0; rc == 0 && d < ndev; d++) {
      printf("  %3d ", d);
      for (int p = 0; rc == 0 && p < ndev; p++) {
        int direct = 0;
        rc = weft_device_peer(rt, d, p, &direct);
        printf("   %s", d == p ? "-" : direct ? "D" : "S");
      }
      putchar('\n');
    }
  }
  int status = CLI_OK;
  if (rc != 0)
    status = cli_fail("info", "reading the devices failed: %s: %s",
                      weft_err_name(rc), weft_last_error_message());
  rc = weft_shutdown(rt);
  if (rc != 0)
    status = cli_fail("info", "weft_shutdown: %s: %s", weft_err_name(rc),
                      weft_last_error_message());
  return status;
}
