/* Runs the fuzz target over the files named on the command line (the seed
 * corpus, or a crash found by scripts/fuzz-trace), without libFuzzer: the
 * CTest suite replays tests/trace/corpus/ this way. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    FILE *f = fopen(argv[i], "rb");
    if (!f) {
      fprintf(stderr, "cannot open %s\n", argv[i]);
      return 1;
    }
    static uint8_t buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    /* An exact-size copy, so ASan sees any read past the end. */
    uint8_t *copy = malloc(n ? n : 1);
    if (!copy)
      return 1;
    for (size_t k = 0; k < n; k++)
      copy[k] = buf[k];
    LLVMFuzzerTestOneInput(copy, n);
    free(copy);
    printf("%s: ok\n", argv[i]);
  }
  return 0;
}
