/* A hand-written trace in the shape PyTorch's profiler (Kineto) writes:
 * absolute microsecond timestamps, cat kernel / gpu_memcpy / gpu_memset /
 * cuda_runtime / cuda_driver, args stream / device / correlation / bytes,
 * Kineto's memcpy names, flow and instant events, string pids and tids,
 * metadata, and many fields weft does not use. */
#include "trace_test.h"

#define B 1712345678000.0 /* the sample's time origin */

int main(void) {
  trace_model m;
  trace_analysis a;
  load_data("pytorch_sample.json", &m, &a);

  /* 19 "X" events, 8 metadata, 5 others; the user_annotation
   * (record_function's ProfilerStep#1) is a range. */
  EXPECT_EQ_INT(m.count[TRACE_OP_KERNEL], 3);
  EXPECT_EQ_INT(m.count[TRACE_OP_MEMCPY], 3);
  EXPECT_EQ_INT(m.count[TRACE_OP_MEMSET], 1);
  EXPECT_EQ_INT(m.count[TRACE_OP_RUNTIME], 7);
  EXPECT_EQ_INT(m.count[TRACE_OP_RANGE], 1);
  EXPECT_EQ_INT(m.count[TRACE_OP_OTHER], 4);
  EXPECT_EQ_INT(m.metadata, 8);
  EXPECT_EQ_INT(m.ignored, 5); /* s, f, and three instants */
  EXPECT_EQ_INT(m.events, m.complete + m.metadata + m.ignored);

  /* Lanes: device 0 streams 7, 13, and 14 (from the tid "stream 14"). */
  EXPECT_EQ_INT(m.ngpu_lanes, 3);
  EXPECT_EQ_INT(m.gpu_lanes[0].stream, 7);
  EXPECT_EQ_INT(m.gpu_lanes[0].nops, 5); /* the memset's stream from its tid */
  EXPECT_EQ_INT(m.gpu_lanes[1].stream, 13);
  EXPECT_EQ_INT(m.gpu_lanes[2].stream, 14);
  EXPECT_EQ_INT(m.gpu_lanes[2].device, 0);
  /* One CPU thread (the annotations and cpu_ops make none). */
  EXPECT_EQ_INT(m.nthreads, 1);
  char label[64];
  trace_thread_label(&m, &m.threads[0], label, sizeof label);
  EXPECT(!strcmp(label, "thread 4242 (python3)"));
  EXPECT(!strcmp(trace_model_str(&m, m.threads[0].process_name), "python3"));

  /* Copy kinds from Kineto's names. */
  int seen = 0;
  for (size_t i = 0; i < m.nops; i++) {
    const trace_op *op = &m.ops[i];
    const char *name = trace_model_str(&m, op->name);
    if (!strcmp(name, "Memcpy HtoD (Pageable -> Device)")) {
      EXPECT(op->copy == TRACE_COPY_HTOD && op->host_mem == TRACE_MEM_PAGEABLE);
      EXPECT_EQ_INT(op->bytes, 419430);
      EXPECT(op->launch != TRACE_NO_OP);
      EXPECT(!strcmp(trace_model_str(&m, m.ops[op->launch].name),
                     "cudaMemcpyAsync"));
      seen++;
    } else if (!strcmp(name, "Memcpy DtoH (Device -> Pinned)")) {
      EXPECT(op->copy == TRACE_COPY_DTOH && op->host_mem == TRACE_MEM_PINNED);
      seen++;
    } else if (!strcmp(name, "Memcpy DtoD (Device -> Device)")) {
      EXPECT(op->copy == TRACE_COPY_DTOD && op->launch == TRACE_NO_OP);
      seen++;
    }
  }
  EXPECT_EQ_INT(seen, 3);

  /* GPU ops: HtoD [20,60) sgemm [80,380) memset [380,382) pow [100,300)
   * DtoH [150,250) add [400,450) DtoD [460,470), from B. */
  const trace_breakdown *b = &a.all;
  EXPECT_NEAR(b->start, B + 20);
  EXPECT_NEAR(b->span, 450);
  EXPECT_NEAR(b->compute, 350);
  EXPECT_NEAR(b->memory, 152);
  EXPECT_NEAR(b->overlap, 100);
  EXPECT_NEAR(b->busy, 402);
  EXPECT_NEAR(b->idle, 48);
  EXPECT_NEAR(trace_pct(b->overlap, b->busy), 100.0 * 100 / 402);
  EXPECT_NEAR(trace_pct(b->overlap, b->memory), 100.0 * 100 / 152);

  /* Stream 7: HtoD, sgemm, memset, add, DtoD: gaps of 20 (host wait: the
   * launch started at 70, after the copy ended at 60), 18 (kernel wait:
   * cuLaunchKernel started at 300, before 382, and the gap is under 30 us)
   * and 10 (other: no call). */
  const trace_stream_stats *s = find_stream(&m, &a, 0, 7);
  EXPECT_EQ_INT(s->ops, 5);
  EXPECT_NEAR(s->host_wait, 20);
  EXPECT_NEAR(s->kernel_wait, 18);
  EXPECT_NEAR(s->other_wait, 10);
  EXPECT_NEAR(s->late_launch, 20); /* the sgemm's call returned at 75 > 60 */
  EXPECT_NEAR(find_stream(&m, &a, 0, 13)->idle, 0);

  /* Delays -45 (clipped to 0, as HTA; counted early), 5, 300 (memset), 13,
   * 54, 97; the DtoD is unmatched. */
  EXPECT_EQ_INT(a.launch.matched, 6);
  EXPECT_EQ_INT(a.launch.unmatched, 1);
  EXPECT_NEAR(a.launch.min, 0);
  EXPECT_EQ_INT(a.launch.early, 1);
  EXPECT_NEAR(a.launch.median, (13 + 54) / 2.0);
  EXPECT_NEAR(a.launch.p90, 97 + 0.5 * (300 - 97));
  EXPECT_NEAR(a.launch.max, 300);

  EXPECT_EQ_INT(a.nkernels, 3);
  EXPECT(!strcmp(trace_model_str(&m, a.kernels[0].name),
                 "ampere_sgemm_128x64_nn"));
  EXPECT_NEAR(a.kernels[1].total, 200);
  const trace_copy_stats *h = &a.copies[TRACE_COPY_HTOD];
  EXPECT_EQ_INT(h->pageable, 1);
  EXPECT_NEAR(h->bytes / (h->total_with_bytes * 1e3), 419430 / 40e3);
  EXPECT_NEAR(a.copies[TRACE_COPY_ROW_MEMSET].bytes, 4096);

  char *text = report_text(&m, &a, 0);
  printf("%s", text);
  EXPECT_HAS(text, "24.9 % of busy time");
  EXPECT_HAS(text, "65.8 % of memory time");
  EXPECT_HAS(text,
             "void at::native::vectorized_elementwise_kernel<4, at::nat...");
  free(text);
  trace_analysis_free(&a);
  trace_model_free(&m);
  printf("pytorch: ok\n");
  return 0;
}
