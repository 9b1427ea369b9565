/* Uses the installed example candidates (<peat/examples/peat_candidates.h>,
 * libpeat_candidates.so): a 2x2 GEMM through the sequential reference and the
 * bf16 candidate, printed. */
#include <peat/examples/peat_candidates.h>

#include <stdio.h>

int main(void) {
  const float a[4] = {1.0f, 2.0f, 3.0f, 4.0f}, b[4] = {1.0f / 3.0f, 0.0f, 0.0f, 1.0f};
  float ref[4] = {0}, bf[4] = {0};
  peat_gemm_sequential(0, 0, 2, 2, 2, 1.0f, a, 2, b, 2, 0.0f, ref, 2);
  peat_cand_bf16(0, 0, 2, 2, 2, 1.0f, a, 2, b, 2, 0.0f, bf, 2);
  printf("candidates: sequential %.9g, bf16 %.9g\n", ref[0], bf[0]);
  return ref[0] != bf[0] ? 0 : 1; /* 1/3 is not a bf16 value */
}
