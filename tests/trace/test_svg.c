/* The SVG timeline: well-formed XML with every lane, legend entry and axis,
 * hostile names escaped, and ops narrower than a pixel merged so that a
 * large trace stays a small picture. Writes the pictures it makes to the
 * current directory (trace_*.svg) for a look. */
#include "trace_test.h"

/* A small XML check: tags balance, attributes are quoted, and every '&' is
 * one of the five entities or a numeric reference. */
static void check_xml(const char *s) {
  const char *stack[64];
  size_t lens[64];
  int depth = 0, root = 0;
  for (const char *p = s; *p; p++) {
    if (*p == '&') {
      EXPECT_MSG(!strncmp(p, "&amp;", 5) || !strncmp(p, "&lt;", 4) ||
                     !strncmp(p, "&gt;", 4) || !strncmp(p, "&quot;", 6) ||
                     !strncmp(p, "&#", 2),
                 "bad entity at: %.40s", p);
      continue;
    }
    EXPECT_MSG(*p != '>', "stray '>' at: %.40s", p);
    if (*p != '<')
      continue;
    if (p[1] == '?') { /* the declaration */
      p = strstr(p, "?>");
      EXPECT(p != NULL);
      p++;
      continue;
    }
    int closing = p[1] == '/';
    const char *name = p + 1 + closing;
    size_t n = strcspn(name, " />\n");
    EXPECT_MSG(n > 0, "empty tag at: %.40s", p);
    /* Find the tag's end outside quoted attribute values. */
    const char *q = name + n;
    while (*q && *q != '>') {
      if (*q == '"') {
        const char *end = strchr(q + 1, '"');
        EXPECT(end != NULL);
        EXPECT_MSG(memchr(q, '<', (size_t)(end - q)) == NULL,
                   "'<' in an attribute: %.60s", q);
        q = end;
      }
      q++;
    }
    EXPECT_MSG(*q == '>', "unterminated tag: %.40s", p);
    int self = q[-1] == '/';
    if (closing) {
      EXPECT_MSG(depth > 0 && lens[depth - 1] == n &&
                     !strncmp(stack[depth - 1], name, n),
                 "mismatched </%.*s>", (int)n, name);
      depth--;
    } else if (!self) {
      EXPECT(depth < 64);
      if (depth == 0)
        root++;
      stack[depth] = name;
      lens[depth++] = n;
    }
    p = q;
  }
  EXPECT_EQ_INT(depth, 0);
  EXPECT_EQ_INT(root, 1);
}

static size_t count(const char *s, const char *sub) {
  size_t n = 0;
  for (const char *p = strstr(s, sub); p; p = strstr(p + 1, sub))
    n++;
  return n;
}

static void save(const char *name, const char *svg, size_t len) {
  FILE *f = fopen(name, "w");
  if (f) {
    fwrite(svg, 1, len, f);
    fclose(f);
  }
}

static void test_two_streams(void) {
  trace_model m;
  trace_analysis a;
  load_data("two_streams.json", &m, &a);
  size_t len;
  char *svg = svg_text(&m, &a, 1000, "two_streams.json", &len);
  save("trace_two_streams.svg", svg, len);
  check_xml(svg);
  EXPECT(!strncmp(svg, "<?xml", 5));
  EXPECT_HAS(svg, "width=\"1000\"");
  EXPECT_HAS(svg, ">stream 7<");
  EXPECT_HAS(svg, ">stream 8<");
  EXPECT_HAS(svg, ">GPU 0<");
  EXPECT_HAS(svg, ">main<"); /* the CPU thread, by its thread_name */
  EXPECT_HAS(svg, ">copy HtoD<");
  EXPECT_HAS(svg, ">kernel ∩ copy<");
  EXPECT_HAS(svg, "= 25.0% of busy, 50.0% of memory time");
  EXPECT_HAS(svg, ">matmul<"); /* wide enough to be labelled */
  EXPECT_HAS(svg, ">0.45<");   /* an axis tick */
  free(svg);
  trace_analysis_free(&a);
  trace_model_free(&m);
}

static void test_tasks_and_pytorch(void) {
  trace_model m;
  trace_analysis a;
  size_t len;
  load_data("weft_tasks.json", &m, &a);
  char *svg = svg_text(&m, &a, 1200, "weft_tasks.json", &len);
  save("trace_weft_tasks.svg", svg, len);
  check_xml(svg);
  EXPECT_HAS(svg, ">worker 0<");
  EXPECT_HAS(svg, ">worker 1<");
  EXPECT_HAS(svg, ">load<");
  EXPECT_HAS(svg, ">compute<");
  free(svg);
  trace_analysis_free(&a);
  trace_model_free(&m);

  load_data("pytorch_sample.json", &m, &a);
  svg = svg_text(&m, &a, 0, "pytorch_sample.json", &len);
  save("trace_pytorch_sample.svg", svg, len);
  check_xml(svg);
  EXPECT_HAS(svg, "width=\"1600\"");
  EXPECT_HAS(svg, ">stream 14<");
  EXPECT_HAS(svg, "&lt;4, at::native::pow_tensor_scalar_kernel_impl");
  free(svg);
  /* The narrowest picture still wraps its legend inside it. */
  svg = svg_text(&m, &a, 10, NULL, &len);
  check_xml(svg);
  EXPECT_HAS(svg, "width=\"400\"");
  free(svg);
  trace_analysis_free(&a);
  trace_model_free(&m);
}

static void test_hostile(void) {
  trace_model m;
  trace_analysis a;
  load_text("[{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":1,"
            "\"args\":{\"name\":\"]]></text><script>x</script>\"}},"
            "{\"ph\":\"X\",\"cat\":\"task\",\"name\":\"t\",\"pid\":1,"
            "\"tid\":1,\"ts\":0,\"dur\":100,\"args\":{\"task\":1,"
            "\"task_name\":\"<b>&amp;\\u0001\\ufffe\\\"'\"}},"
            "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"<script>alert(1)"
            "</script>\",\"ts\":0,\"dur\":100}]",
            &m, &a);
  size_t len;
  /* A title that is not UTF-8 (file names need not be). */
  char *svg = svg_text(&m, &a, 800, "bad\xFF<name>.json", &len);
  check_xml(svg);
  EXPECT(!strstr(svg, "<script>"));
  EXPECT(!strstr(svg, "<b>"));
  EXPECT_HAS(svg, "&lt;script&gt;alert(1)&lt;/script&gt;");
  EXPECT_HAS(svg, "&lt;b&gt;&amp;amp;??&quot;&#39;");
  EXPECT_HAS(svg, "bad?&lt;name&gt;.json");
  free(svg);
  trace_analysis_free(&a);
  trace_model_free(&m);
}

/* 200 000 ops of 10 ns every 20 ns, alternating kernel and copy on one
 * stream, plus a second stream with ops wide enough to draw one by one. */
static void test_merging(void) {
  size_t n = 200000, cap = n * 140 + 1000, len = 0;
  char *text = malloc(cap);
  EXPECT(text != NULL);
  len += (size_t)snprintf(text + len, cap - len, "[");
  for (size_t i = 0; i < n; i++)
    len += (size_t)snprintf(
        text + len, cap - len,
        "%s{\"ph\":\"X\",\"cat\":\"%s\",\"name\":\"op%zu\",\"ts\":%.3f,"
        "\"dur\":0.01,\"args\":{\"stream\":1}}",
        i ? "," : "", i % 2 ? "gpu_memcpy" : "kernel", i % 7, 0.02 * (double)i);
  for (size_t i = 0; i < 10; i++)
    len +=
        (size_t)snprintf(text + len, cap - len,
                         ",{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"big\","
                         "\"ts\":%zu,\"dur\":300,\"args\":{\"stream\":2}}",
                         i * 400);
  len += (size_t)snprintf(text + len, cap - len, "]");
  EXPECT(len < cap);
  trace_model m;
  trace_analysis a;
  load_text(text, &m, &a);
  free(text);
  size_t svg_len;
  char *svg = svg_text(&m, &a, 1600, "merge", &svg_len);
  save("trace_merge.svg", svg, svg_len);
  check_xml(svg);
  size_t rects = count(svg, "<rect");
  printf("merge: %zu ops drawn as %zu rects, %zu bytes of SVG\n", m.nops, rects,
         svg_len);
  EXPECT(rects < 4 * 1600);
  EXPECT(svg_len < 1000000);
  EXPECT_EQ_INT(count(svg, ">big<"), 10); /* each wide op keeps its label */
  free(svg);
  trace_analysis_free(&a);
  trace_model_free(&m);
}

int main(void) {
  test_two_streams();
  test_tasks_and_pytorch();
  test_hostile();
  test_merging();
  printf("svg: ok\n");
  return 0;
}
