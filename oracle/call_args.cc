// Element counts of call argument shapes.
#include "oracle/call_args.h"

#include <limits>

namespace rpa {

// Saturates at INT64_MAX so that a hostile shape cannot overflow.
int64_t num_elements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d == 0) return 0;
    if (n > std::numeric_limits<int64_t>::max() / d) return std::numeric_limits<int64_t>::max();
    n *= d;
  }
  return n;
}


IndexArg int32_tensor(std::vector<int64_t> shape, std::vector<int64_t> data) {
  IndexArg a;
  a.shape = std::move(shape);
  a.dtype = DType::kInt32;
  a.has_data = true;
  a.data = std::move(data);
  return a;
}

}  // namespace rpa
