/* check.h — the tiny assertion kit of the pure-C tests (C11, no framework).
 * CHECK(cond) records a failure and goes on; CHECK_STATUS(call, status) also
 * requires a non-empty last-error message when status is not OK. main() ends
 * with `return check_report("name");` which prints "N passed, N failed". */
#ifndef PEAT_TESTS_C_CHECK_H
#define PEAT_TESTS_C_CHECK_H

#include <peat/peat.h>

void check_record(int ok, const char* expr, const char* file, int line);
void check_status(peat_status_t got, peat_status_t want, const char* expr, const char* file, int line);
int check_report(const char* suite);

/* A compact (strides NULL) f32 tensor view on the CPU over `data`. */
DLTensor check_tensor_f32(float* data, int32_t ndim, int64_t* shape);

/* A peat_kernel_fn copying a 1-D f32 input to the output (returns 1 unless
 * one input and one output). */
int32_t check_copy_kernel(void* ctx, const DLTensor* in, int32_t n_in, DLTensor* out, int32_t n_out,
                          const void* attrs);

#define CHECK(cond) check_record((cond) ? 1 : 0, #cond, __FILE__, __LINE__)
#define CHECK_STATUS(call, want) check_status((call), (want), #call, __FILE__, __LINE__)

#endif
