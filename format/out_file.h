/* A file written whole or not at all: the trace, a timeline, a benchmark's
 * JSON and charts. A new path, or a regular file, is written to a
 * temporary file beside it and renamed over it only once every byte is
 * out; a failed write removes the temporary and leaves the path as it
 * was. Anything else that exists at the path (a device, a pipe, a
 * symbolic link) is written in place and never removed. "-" is stdout.
 * Header-only, as the rest of format/. */
#ifndef WEFT_FORMAT_OUT_FILE_H
#define WEFT_FORMAT_OUT_FILE_H

/* mkstemp, lstat, fchmod, fdopen: POSIX.1-2008, asked for by the
 * including file before its first include. */
#if !defined(_GNU_SOURCE) &&                                                   \
    !(defined(_POSIX_C_SOURCE) && _POSIX_C_SOURCE >= 200809L)
#error "define _POSIX_C_SOURCE 200809L before the first include"
#endif

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct out_file {
  FILE *f;
  const char *path;
  int temp;       /* written to tmp, renamed over path at the close */
  char tmp[4104]; /* PATH_MAX and the suffix: no allocation to fail */
} out_file;

/* Opens path for writing into o->f. Returns 0, or -1 with errno set. */
static inline int out_file_open(out_file *o, const char *path) {
  o->f = NULL;
  o->path = path;
  o->temp = 0;
  if (!strcmp(path, "-")) {
    o->f = stdout;
    return 0;
  }
  struct stat st;
  int exists = lstat(path, &st) == 0;
  if (exists && !S_ISREG(st.st_mode)) {
    o->f = fopen(path, "w");
    return o->f ? 0 : -1;
  }
  size_t n = strlen(path);
  if (n + sizeof ".XXXXXX" > sizeof o->tmp) {
    errno = ENAMETOOLONG;
    return -1;
  }
  memcpy(o->tmp, path, n);
  memcpy(o->tmp + n, ".XXXXXX", sizeof ".XXXXXX");
  int fd = mkstemp(o->tmp);
  if (fd < 0)
    return -1;
  /* The mode fopen would have given: the file's own, or 0666 less the
   * umask (mkstemp makes 0600). */
  mode_t mode = exists ? st.st_mode & 07777 : 0;
  if (!exists) {
    mode_t mask = umask(0);
    umask(mask);
    mode = 0666 & ~mask;
  }
  if (fchmod(fd, mode) != 0 || !(o->f = fdopen(fd, "w"))) {
    int e = errno;
    close(fd);
    unlink(o->tmp);
    errno = e;
    return -1;
  }
  o->temp = 1;
  return 0;
}

/* Closes o: with keep, and every write and the close good, the path now
 * holds what was written (returns 0); else the temporary is removed and
 * the path left as it was (returns -1, errno the first failure's, or 0
 * when only the writer failed). */
static inline int out_file_close(out_file *o, int keep) {
  int bad = ferror(o->f), e = bad ? EIO : 0;
  if (o->f == stdout) {
    if (fflush(stdout) != 0 && !e)
      e = errno;
  } else if (fclose(o->f) != 0 && !e) {
    e = errno;
  }
  o->f = NULL;
  if (o->temp) {
    if (keep && !e && rename(o->tmp, o->path) != 0)
      e = errno;
    if (!keep || e)
      unlink(o->tmp);
    o->temp = 0;
  }
  errno = e; /* 0 when nothing failed but the writer (keep 0) */
  return e || !keep ? -1 : 0;
}

#endif
