/* Pure-C test of the one versioned-struct rule (lib/core/versioned_struct.hpp):
 * every struct the library reads or fills accepts any struct_size from its
 * first released version up to sizeof, and the library reads and writes only
 * that prefix. A caller built against an older, smaller header is simulated by
 * a struct_size of the first version inside a larger buffer whose tail holds a
 * sentinel: every entry point that takes a peat_signature_t (in, out, in-out)
 * must succeed and leave the tail untouched. The first version of
 * peat_signature_t ends with xor_popcount_hist; fields appended later (Detector
 * v2) make the prefix strictly smaller than sizeof, and this test then runs
 * the real "older caller" case. Includes only <peat/peat.h>. */
#include <peat/peat.h>

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

#define SIG_V1 (offsetof(peat_signature_t, xor_popcount_hist) + sizeof(((peat_signature_t*)0)->xor_popcount_hist))
#define TAIL 64
#define SENTINEL 0xAB

/* A signature buffer as an older caller has it: its struct, then memory that is not its. */
typedef struct old_signature {
  union {
    peat_signature_t sig;
    unsigned char bytes[sizeof(peat_signature_t) + TAIL];
  } u;
} old_signature_t;

static void make_old(old_signature_t* s) {
  peat_signature_init(&s->u.sig);
  memset(s->u.bytes + SIG_V1, SENTINEL, sizeof s->u.bytes - SIG_V1);
  s->u.sig.struct_size = (uint32_t)SIG_V1;
}

static int tail_untouched(const old_signature_t* s) {
  size_t i;
  for (i = SIG_V1; i < sizeof s->u.bytes; ++i)
    if (s->u.bytes[i] != SENTINEL) return 0;
  return s->u.sig.struct_size == SIG_V1;
}

static int32_t halve(void* ctx, const DLTensor* in, int32_t n_in, DLTensor* out, int32_t n_out, const void* attrs) {
  int64_t i;
  (void)ctx;
  (void)attrs;
  if (n_in != 1 || n_out != 1) return 1;
  for (i = 0; i < in[0].shape[0]; ++i) ((float*)out[0].data)[i] = 0.5f * ((const float*)in[0].data)[i];
  return 0;
}


int main(void) {
  float g[8] = {1, 2, 3, 4, 5, 6, 7, 8}, c[8] = {1, 2, 3, 4.5f, 5, 6, 7, 8.25f}, out[8];
  int64_t shape[1] = {8};
  DLTensor tg = check_tensor_f32(g, 1, shape), tc = check_tensor_f32(c, 1, shape), to = check_tensor_f32(out, 1, shape);
  peat_signature_t full, full2;
  old_signature_t old, old2;
  double v_full = 0, v_old = 0;
  peat_session_t* session = NULL;
  peat_injector_t* injector = NULL;
  peat_injector_policy_t policy;
  peat_aggregator_t* agg = NULL;
  peat_detection_t det;
  peat_action_t action = PEAT_ACTION_INVALID;
  uint32_t op = 0;

  CHECK(SIG_V1 <= sizeof(peat_signature_t) && SIG_V1 % 8 == 0);

  /* out: peat_analyze fills the prefix, with the same values as a full struct */
  peat_signature_init(&full);
  CHECK_STATUS(peat_analyze(&tg, &tc, NULL, &full, NULL), PEAT_STATUS_OK);
  make_old(&old);
  CHECK_STATUS(peat_analyze(&tg, &tc, NULL, &old.u.sig, NULL), PEAT_STATUS_OK);
  CHECK(tail_untouched(&old));
  CHECK(old.u.sig.count == 8 && old.u.sig.bitwise_mismatch_count == 2 && old.u.sig.max_abs_error == 0.5);
  CHECK(memcmp(&old.u.sig.flags, &full.flags, SIG_V1 - offsetof(peat_signature_t, flags)) == 0);

  /* in: metrics read the prefix */
  CHECK_STATUS(peat_signature_rmse(&full, &v_full), PEAT_STATUS_OK);
  CHECK_STATUS(peat_signature_rmse(&old.u.sig, &v_old), PEAT_STATUS_OK);
  CHECK(v_full == v_old && v_old > 0);

  /* in-out: accumulate and merge update the prefix only */
  CHECK_STATUS(peat_analyze_accumulate(&tg, &tc, NULL, &old.u.sig, NULL), PEAT_STATUS_OK);
  CHECK(tail_untouched(&old) && old.u.sig.count == 16 && old.u.sig.bitwise_mismatch_count == 4);
  make_old(&old2);
  CHECK_STATUS(peat_signature_merge(&old2.u.sig, &old.u.sig), PEAT_STATUS_OK);
  CHECK(tail_untouched(&old2) && old2.u.sig.count == 16);
  full2 = full;
  CHECK_STATUS(peat_signature_merge(&full2, &old.u.sig), PEAT_STATUS_OK); /* an older src into a full dst */
  CHECK(full2.count == 24 && full2.struct_size == sizeof full2);

  /* sizes outside [first version, sizeof] are refused, and nothing is written */
  make_old(&old2);
  old2.u.sig.struct_size = (uint32_t)SIG_V1 - 8;
  CHECK_STATUS(peat_analyze(&tg, &tc, NULL, &old2.u.sig, NULL), PEAT_STATUS_VERSION_MISMATCH);
  old2.u.sig.struct_size = (uint32_t)sizeof(peat_signature_t) + 8;
  CHECK_STATUS(peat_analyze(&tg, &tc, NULL, &old2.u.sig, NULL), PEAT_STATUS_VERSION_MISMATCH);
  CHECK_STATUS(peat_signature_rmse(&old2.u.sig, &v_old), PEAT_STATUS_VERSION_MISMATCH);
  CHECK(old2.u.sig.count == 0);

  /* the aggregator takes and gives an older signature */
  CHECK_STATUS(peat_aggregator_create(NULL, &agg), PEAT_STATUS_OK);
  CHECK_STATUS(peat_aggregator_add(agg, 0, 0, 0, &old.u.sig), PEAT_STATUS_OK);
  make_old(&old2);
  CHECK_STATUS(peat_aggregator_signature(agg, 0, &old2.u.sig), PEAT_STATUS_OK);
  CHECK(tail_untouched(&old2) && old2.u.sig.count == 16);
  peat_aggregator_destroy(agg);

  /* the detector reads an older signature */
  peat_detection_init(&det);
  CHECK_STATUS(peat_detect(&old.u.sig, NULL, &det), PEAT_STATUS_OK);
  CHECK(det.verdict_count >= 1);

  /* the injector's firing signature is written as the caller's prefix */
  CHECK_STATUS(peat_session_create(NULL, &session), PEAT_STATUS_OK);
  CHECK_STATUS(peat_session_intern_op(session, "layer.scale", &op), PEAT_STATUS_OK);
  CHECK_STATUS(peat_injector_create(session, NULL, &injector), PEAT_STATUS_OK);
  peat_injector_policy_init(&policy);
  policy.action = PEAT_ACTION_RUN_BOTH;
  CHECK_STATUS(peat_injector_add_policy(injector, &policy, NULL), PEAT_STATUS_OK);
  CHECK_STATUS(peat_injector_set_candidate(injector, "*", halve, NULL), PEAT_STATUS_OK);
  CHECK_STATUS(peat_injector_dispatch(injector, op, &tg, 1, &to, 1, NULL, check_copy_kernel, NULL, &action, NULL),
               PEAT_STATUS_OK);
  CHECK(action == PEAT_ACTION_RUN_BOTH && out[3] == 4.0f);
  make_old(&old2);
  CHECK_STATUS(peat_injector_firing_signature(injector, 0, &old2.u.sig), PEAT_STATUS_OK);
  CHECK(tail_untouched(&old2) && old2.u.sig.count == 8 && old2.u.sig.max_abs_error == 4.0);
  {
    /* an older peat_firing_t: only the fields up to `call` */
    union {
      peat_firing_t f;
      unsigned char bytes[sizeof(peat_firing_t)];
    } fu;
    memset(&fu, SENTINEL, sizeof fu);
    fu.f.struct_size = (uint32_t)offsetof(peat_firing_t, step);
    CHECK_STATUS(peat_injector_firing(injector, 0, &fu.f), PEAT_STATUS_OK);
    CHECK(fu.f.op == op && fu.f.call == 0 && fu.bytes[offsetof(peat_firing_t, step)] == SENTINEL);
  }
  peat_injector_destroy(injector);
  peat_session_destroy(session);
  return check_report("test_versioned");
}
