// Maps the C ABI's rpa_dtype to the dtype model's DType, for kernels that receive an rpa_problem.
#pragma once

#include "oracle/dtype.h"
#include "rpa/rpa.h"

namespace rpa {

DType dtype_of(rpa_dtype d);
rpa_dtype abi_dtype_of(DType d);  // d must be computable

}  // namespace rpa
