// libFuzzer target: the case reader must turn any byte string into a Case or a CaseError, never a crash.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "harness/case.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    rpa::Case c = rpa::parse_case(text, "fuzz:1", ".");
    // What the reader accepts, the writer must write and the reader re-read.
    rpa::Case again = rpa::parse_case(rpa::write_case(c), "fuzz:2", ".");
    if (again.id != c.id || again.call.q.shape != c.call.q.shape || again.call.kv_lens.data != c.call.kv_lens.data)
      std::abort();
  } catch (const rpa::CaseError&) {
  }
  return 0;
}
