// CPU traits for the fast kernel's path choices (see cpu_traits.h).
#include "kernels/fast/cpu_traits.h"

namespace rpa::fast {

bool has_bf16_dot() {
#if defined(__x86_64__) || defined(__i386__)
  static const bool has = __builtin_cpu_supports("avx512bf16");
  return has;
#else
  return false;
#endif
}

bool has_byte_permute() {
#if defined(__x86_64__) || defined(__i386__)
  static const bool has = __builtin_cpu_supports("avx512vbmi");
  return has;
#else
  return false;
#endif
}

bool bf16_dot_is_fast() {
#if defined(__x86_64__) || defined(__i386__)
  static const bool fast = has_bf16_dot() && __builtin_cpu_is("amd");
  return fast;
#else
  return false;
#endif
}

}  // namespace rpa::fast
