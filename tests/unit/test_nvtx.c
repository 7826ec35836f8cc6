/* NVTX task ranges (src/nvtx.h): a range per run slice of a task, named
 * after it, pushed and popped on one thread, never nested, always
 * balanced. This program is its own NVTX tool: it defines the static
 * injection hook that NVTX's loader calls (InitializeInjectionNvtx2_fnptr)
 * and counts the pushes and pops weft makes. Runs on the host backend, so
 * any CUDA build tests it, GPU or not. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

/* The tool's side: NVTX's types and declarations, not its implementation
 * (NVTX_NO_IMPL, as NVTX says tools do). */
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include "expect.h"
#include "weft.h"

#define NTASKS 48
#define YIELDS 3
#define PREFIX "nvtx task "

static atomic_int pushes, pops, open_ranges, nested, unbalanced, foreign;
static _Thread_local int depth;

static int NVTX_API on_push(const char *name) {
  atomic_fetch_add(&pushes, 1);
  atomic_fetch_add(&open_ranges, 1);
  if (++depth > 1)
    atomic_fetch_add(&nested, 1);
  if (!name || strncmp(name, PREFIX, strlen(PREFIX)) != 0)
    atomic_fetch_add(&foreign, 1);
  return depth - 1;
}

static int NVTX_API on_pop(void) {
  atomic_fetch_add(&pops, 1);
  atomic_fetch_sub(&open_ranges, 1);
  if (--depth < 0)
    atomic_fetch_add(&unbalanced, 1);
  return depth;
}

static int attached;

static int NVTX_API init_tool(NvtxGetExportTableFunc_t get) {
  const NvtxExportTableCallbacks *cb =
      (const NvtxExportTableCallbacks *)get(NVTX_ETID_CALLBACKS);
  NvtxFunctionTable core = NULL;
  unsigned size = 0;
  if (!cb || !cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &size) ||
      size <= NVTX_CBID_CORE_RangePop)
    return 0;
  *core[NVTX_CBID_CORE_RangePushA] = (NvtxFunctionPointer)on_push;
  *core[NVTX_CBID_CORE_RangePop] = (NvtxFunctionPointer)on_pop;
  attached = 1;
  return 1;
}

NvtxInitializeInjectionNvtxFunc_t InitializeInjectionNvtx2_fnptr = init_tool;

static void task(void *arg) {
  (void)arg;
  for (int i = 0; i < YIELDS; i++)
    weft_yield();
}

int main(void) {
  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  o.backend = WEFT_BACKEND_HOST;
  o.workers = 2;
  weft_runtime *rt;
  EXPECT(weft_init(&rt, &o) == 0);
  weft_task *t[NTASKS];
  char names[NTASKS][32];
  for (int i = 0; i < NTASKS; i++) {
    snprintf(names[i], sizeof names[i], PREFIX "%d", i);
    weft_task_opts to;
    weft_task_opts_init(&to);
    to.name = names[i];
    EXPECT(weft_task_spawn(rt, &t[i], task, NULL, &to) == 0);
  }
  for (int i = 0; i < NTASKS; i++)
    EXPECT(weft_task_join(t[i]) == 0);
  EXPECT(weft_shutdown(rt) == 0);

  EXPECT_MSG(attached, "NVTX never called the tool: no range was pushed");
  /* Each task runs at least once per yield plus its first run. */
  EXPECT_MSG(atomic_load(&pushes) >= NTASKS * (YIELDS + 1),
             "%d ranges pushed, expected at least %d", atomic_load(&pushes),
             NTASKS * (YIELDS + 1));
  EXPECT_MSG(atomic_load(&pushes) == atomic_load(&pops), "%d pushes, %d pops",
             atomic_load(&pushes), atomic_load(&pops));
  EXPECT(atomic_load(&open_ranges) == 0);
  EXPECT_MSG(atomic_load(&nested) == 0, "%d ranges nested in another",
             atomic_load(&nested));
  EXPECT_MSG(atomic_load(&unbalanced) == 0,
             "%d pops on a thread with no open range",
             atomic_load(&unbalanced));
  EXPECT_MSG(atomic_load(&foreign) == 0, "%d ranges not named after a task",
             atomic_load(&foreign));
  printf("ok: %d ranges, balanced\n", atomic_load(&pushes));
  return 0;
}
