// CPU traits for the fast kernel's path choices (see cpu_traits.h).
#include "kernels/fast/cpu_traits.h"

// The compiler's CPUID queries take string literals, hence macros; off x86
// every feature reads as absent.
#if defined(__x86_64__) || defined(__i386__)
#define RPA_CPU_SUPPORTS(feature) __builtin_cpu_supports(feature)
#define RPA_CPU_IS(vendor) __builtin_cpu_is(vendor)
#else
#define RPA_CPU_SUPPORTS(feature) false
#define RPA_CPU_IS(vendor) false
#endif

namespace rpa::fast {

bool has_bf16_dot() {
  static const bool has = RPA_CPU_SUPPORTS("avx512bf16");
  return has;
}

bool has_byte_permute() {
  static const bool has = RPA_CPU_SUPPORTS("avx512vbmi");
  return has;
}

bool bf16_dot_is_fast() {
  static const bool fast = has_bf16_dot() && RPA_CPU_IS("amd");
  return fast;
}

}  // namespace rpa::fast
