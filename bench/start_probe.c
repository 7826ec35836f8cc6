/* The `start` scenario's probe (sc_start.c): a program that does nothing,
 * built three times: linked with weft, with the CUDA runtime and CUPTI
 * alone (what weft links), and with cuBLAS too. Its whole run is the
 * dynamic linker's work and the linked libraries' initialisers. */
int main(void) { return 0; }
