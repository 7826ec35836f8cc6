// A kernel that faults: it writes through the pointer it is given, which
// the test makes invalid (test_graph_fault.c).
extern "C" __global__ void weft_test_fault(int *p) { *p = 1; }
