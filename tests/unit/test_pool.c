/* The handle pools (src/pool.h): a handle names one life of an object.
 *
 * One object at a time is taken and given back, 5 million times, with the
 * quarantine's 64 others ahead of it on the free list, so each of the 65
 * objects' memory lives about 77 000 times: more than the 16 bits of
 * generation a handle carries. The handle of every object's first life
 * must never come back (an object whose generation runs out is retired,
 * not reused), and the drain frees the retired ones too (the sanitizer
 * builds' leak check sees it). */
#include <stdlib.h>

#include "expect.h"
#include "weft_internal.h"

enum { SLOTS = WEFT__POOL_QUARANTINE + 1, CYCLES = 5000000 };

typedef struct obj {
  weft__obj hdr;
  int payload;
} obj;

int main(void) {
  weft__pool p = {0};
  void *first[SLOTS];
  weft__obj *addr[SLOTS];
  int nfirst = 0;
  size_t retired = 0;
  for (int i = 0; i < CYCLES; i++) {
    weft__obj *o = weft__pool_get(&p, sizeof(obj));
    EXPECT(o != NULL);
    EXPECT_EQ_INT((int)p.live, 1);
    void *h = weft__handle_of(o);
    if (nfirst < SLOTS && o->gen == 0) {
      first[nfirst] = h;
      addr[nfirst++] = o;
    }
    for (int k = 0; i >= SLOTS && k < nfirst; k++)
      if (addr[k] == o)
        EXPECT_MSG(h != first[k],
                   "cycle %d: the first life's handle %p came "
                   "back",
                   i, h);
    EXPECT(weft__handle_obj(h) == o);
    EXPECT(weft__handle_live(h, o));
    if (o->gen == UINT16_MAX)
      retired++;
    weft__pool_put(&p, o);
  }
  EXPECT_EQ_INT(nfirst, SLOTS);
  EXPECT_MSG(retired > 0, "no object ran out of generations in %d cycles",
             CYCLES);
  EXPECT_EQ_INT((int)p.live, 0);
  weft__pool_drain(&p);
  EXPECT(p.retired == NULL && p.head == NULL);
  return 0;
}
