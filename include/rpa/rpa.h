/* The public C ABI of rpa-conformance: one ragged paged attention call as plain buffers in, plain buffers out.
 *
 * An implementation (the in-tree kernels, or a third-party port loaded as a
 * plugin) receives an rpa_problem and writes the attention output. Tensor
 * values are passed as float32 holding values that are exactly representable
 * in the tensor's dtype (every value of every supported dtype widens to
 * float32 exactly), so a port never needs our dtype code to read them; ports
 * that want the stored bits re-encode them (see oracle/dtype.h).
 */
#ifndef RPA_RPA_H_
#define RPA_RPA_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RPA_ABI_VERSION 1

/* The dtypes attention computes with. Values are stable ABI numbers. */
typedef enum rpa_dtype {
  RPA_FLOAT32 = 0,
  RPA_BFLOAT16 = 1,
  RPA_FLOAT16 = 2,
  RPA_FLOAT8_E4M3FN = 3,
  RPA_FLOAT8_E5M2 = 4,
  RPA_INT8 = 5,
  RPA_INT4 = 6
} rpa_dtype;

typedef struct rpa_problem {
  uint32_t abi_version; /* RPA_ABI_VERSION */
  rpa_dtype q_dtype;
  rpa_dtype kv_dtype;

  int64_t num_tokens;    /* q: [num_tokens, num_q_heads, head_dim] */
  int64_t num_q_heads;
  int64_t head_dim;
  int64_t total_num_pages; /* kv_pages: [total_num_pages, page_size, num_combined_kv_heads, head_dim] */
  int64_t page_size;
  int64_t num_combined_kv_heads; /* 2 * num_kv_heads: K at even, V at odd */
  int64_t max_num_seqs;  /* kv_lens: [max_num_seqs], cu_q_lens: [max_num_seqs + 1] */
  int64_t pages_per_seq; /* page_indices: [max_num_seqs, pages_per_seq] */

  const float* q;
  const float* kv_pages;
  const int32_t* kv_lens;
  const int32_t* page_indices;
  const int32_t* cu_q_lens;
  int32_t num_seqs;

  /* Keyword options, already converted to what the float32 math sees
   * (Python floats rounded to float32 where they meet float32 arrays). */
  float sm_scale;
  int32_t has_sliding_window;
  int64_t sliding_window;
  int32_t has_soft_cap;
  float soft_cap;
  float mask_value; /* the default is -0.7 * FLT_MAX */
  int32_t has_k_scale;
  float k_scale;
  int32_t has_v_scale;
  float v_scale;

  /* Block sizes the kernel entry chose (0: the implementation chooses). */
  int64_t num_kv_pages_per_block;
  int64_t num_queries_per_block;
  /* Number of threads an implementation may use (0: its default). */
  int32_t num_threads;
  /* Non-zero: accept head counts the TPU kernel rejects as not fully tiled. */
  int32_t allow_untiled_heads;
} rpa_problem;

/* Status of a call. On error, `message` (if the implementation sets it)
 * points to a NUL-terminated string owned by the implementation, valid until
 * its next call on the same thread. */
typedef struct rpa_status {
  int32_t code;          /* 0: ok; otherwise one of RPA_ERR_* */
  const char* error_class; /* "ValueError", "AssertionError", ... or NULL */
  const char* message;
} rpa_status;

#define RPA_OK 0
#define RPA_ERR_REJECTED 1   /* the input is rejected as the Python entry would */
#define RPA_ERR_UNSUPPORTED 2 /* the implementation cannot run this configuration */
#define RPA_ERR_INTERNAL 3

/* Writes out[num_tokens * num_q_heads * head_dim] (values of q_dtype widened
 * to float32). Rows past cu_q_lens[num_seqs] are left as the implementation
 * documents; the harness checks only that they are not the valid rows'. */
typedef rpa_status (*rpa_attention_fn)(const rpa_problem* problem, float* out);

/* What a plugin exports: `rpa_plugin_v1`, returning its descriptor. */
typedef struct rpa_plugin {
  uint32_t abi_version;
  const char* name;
  rpa_attention_fn attention;
} rpa_plugin;

typedef const rpa_plugin* (*rpa_plugin_entry_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* RPA_RPA_H_ */
