/* weft.hpp in two translation units, one built without exceptions
 * (mixed_noexcept.cpp): a handle made in either is joined in the other.
 * The task state's layout depended on __cpp_exceptions, so a handle
 * spawned without exceptions and joined with them read its result as an
 * exception_ptr (SIGSEGV in exception_ptr's copy). */
#include <stdexcept>

#include "cpp_common.hpp"

weft::task<int> spawn_without_exceptions(weft::runtime &rt);
int join_without_exceptions(weft::task<int> &t, int *out);

int main() {
  weft::runtime rt = open_runtime();
  auto a = spawn_without_exceptions(rt);
  EXPECT_EQ_INT(a.join(), 42);
  auto b = spawn_without_exceptions(rt);
  int v = 0;
  EXPECT_OK(join_without_exceptions(b, &v));
  EXPECT_EQ_INT(v, 42);
  auto c = weft::spawn(rt, []() -> int { throw std::runtime_error("here"); });
  EXPECT_ERR(join_without_exceptions(c, &v), WEFT_ESTATE);
  auto d = weft::spawn(rt, [] { return 7; });
  EXPECT_OK(join_without_exceptions(d, &v));
  EXPECT_EQ_INT(v, 7);
  std::printf("ok\n");
  return 0;
}
