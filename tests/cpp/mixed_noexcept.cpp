/* test_mixed.cpp's other translation unit, built with -fno-exceptions. */
#include <weft.hpp>

weft::task<int> spawn_without_exceptions(weft::runtime &rt) {
  return weft::spawn(rt, [] { return 42; });
}

int join_without_exceptions(weft::task<int> &t, int *out) {
  return t.try_join(out);
}
