/* Pure-C test of peat/injector.h: every exported function, including misuse
 * (NULL handles and pointers, wrong struct_size, unknown enum values, bad
 * globs, missing shared objects). Includes only <peat/peat.h>. */
#include <peat/peat.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

static float g_in[24], g_out[24];
static int64_t g_shape[2] = {4, 6};

static DLTensor tensor_f32(float* data) { return check_tensor_f32(data, 2, g_shape); }

static int32_t golden_copy(void* ctx, const DLTensor* inputs, int32_t n_in, DLTensor* outputs, int32_t n_out,
                           const void* attrs) {
  (void)ctx;
  (void)attrs;
  if (n_in != 1 || n_out != 1) return 1;
  memcpy(outputs[0].data, inputs[0].data, sizeof g_in);
  return 0;
}

static int32_t candidate_half(void* ctx, const DLTensor* inputs, int32_t n_in, DLTensor* outputs, int32_t n_out,
                              const void* attrs) {
  int i;
  const float* in = (const float*)inputs[0].data;
  float* out = (float*)outputs[0].data;
  (void)ctx;
  (void)attrs;
  (void)n_in;
  (void)n_out;
  for (i = 0; i < 24; ++i) out[i] = 0.5f * in[i];
  return 0;
}

/* A racy reduction's signature: rows 0 and 1 of the input are equal, and on
 * every other call the candidate swaps the results of two output elements
 * whose golden values differ -- the same multiset of values each time. */
static int g_racy_calls;
static int32_t candidate_swapping(void* ctx, const DLTensor* inputs, int32_t n_in, DLTensor* outputs,
                                  int32_t n_out, const void* attrs) {
  float* out = (float*)outputs[0].data;
  (void)ctx;
  (void)attrs;
  (void)n_in;
  (void)n_out;
  memcpy(out, inputs[0].data, sizeof g_in);
  if (g_racy_calls++ % 2 == 1) {
    const float t = out[2];
    out[2] = out[3];
    out[3] = t;
  }
  return 0;
}

static void test_run_twice(void) {
  peat_session_t* session = NULL;
  peat_injector_t* injector = NULL;
  peat_injector_policy_t policy;
  peat_firing_t firing;
  peat_signature_t first, rerun;
  peat_detect_context_t ctx;
  peat_detection_t det;
  uint32_t op = 0, index = 0;
  peat_action_t action;
  DLTensor in = tensor_f32(g_in), out = tensor_f32(g_out);
  int i;
  CHECK_STATUS(peat_session_create(NULL, &session), PEAT_STATUS_OK);
  CHECK_STATUS(peat_injector_create(session, NULL, &injector), PEAT_STATUS_OK);
  CHECK_STATUS(peat_session_intern_op(session, "gemm", &op), PEAT_STATUS_OK);
  peat_injector_policy_init(&policy);
  CHECK(policy.run_twice == 0);
  policy.run_twice = 2;
  CHECK_STATUS(peat_injector_add_policy(injector, &policy, &index), PEAT_STATUS_INVALID_ARGUMENT);
  policy.run_twice = 1;
  CHECK_STATUS(peat_injector_add_policy(injector, &policy, &index), PEAT_STATUS_OK);
  CHECK_STATUS(peat_injector_set_candidate(injector, "*", candidate_swapping, NULL), PEAT_STATUS_OK);
  for (i = 0; i < 24; ++i) g_in[i] = (float)(i + 1);
  g_racy_calls = 0;
  CHECK_STATUS(peat_injector_dispatch(injector, op, &in, 1, &out, 1, NULL, golden_copy, NULL, &action, NULL),
               PEAT_STATUS_OK);
  CHECK(action == PEAT_ACTION_RUN_BOTH);
  memset(&firing, 0, sizeof firing);
  firing.struct_size = sizeof firing;
  CHECK_STATUS(peat_injector_firing(injector, 0, &firing), PEAT_STATUS_OK);
  /* run 1 equals the golden; run 2 swapped two elements */
  CHECK(firing.mismatches == 0);
  CHECK(firing.rerun_mismatches == 2);
  peat_signature_init(&first);
  peat_signature_init(&rerun);
  CHECK_STATUS(peat_injector_firing_signature(injector, 0, &first), PEAT_STATUS_OK);
  CHECK_STATUS(peat_injector_firing_rerun_signature(injector, 0, &rerun), PEAT_STATUS_OK);
  CHECK(rerun.count == 24 && rerun.bitwise_mismatch_count == 2);
  /* the Detector decides NONDETERMINISM from the runs themselves */
  peat_detect_context_init(&ctx);
  ctx.rerun_diff = &rerun;
  peat_detection_init(&det);
  CHECK_STATUS(peat_detect(&first, &ctx, &det), PEAT_STATUS_OK);
  CHECK(det.verdict_count >= 1 && det.verdicts[0].model == PEAT_ERROR_MODEL_NONDETERMINISM);
  CHECK_STATUS(peat_injector_firing_rerun_signature(injector, 1, &rerun), PEAT_STATUS_NOT_FOUND);
  CHECK_STATUS(peat_injector_firing_rerun_signature(NULL, 0, &rerun), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_injector_firing_rerun_signature(injector, 0, NULL), PEAT_STATUS_INVALID_ARGUMENT);

  /* a deterministic candidate: 0 differing; without run_twice: -1 and NOT_FOUND */
  CHECK_STATUS(peat_injector_set_candidate(injector, "*", candidate_half, NULL), PEAT_STATUS_OK);
  CHECK_STATUS(peat_injector_dispatch(injector, op, &in, 1, &out, 1, NULL, golden_copy, NULL, &action, NULL),
               PEAT_STATUS_OK);
  CHECK_STATUS(peat_injector_firing(injector, 1, &firing), PEAT_STATUS_OK);
  CHECK(firing.mismatches == 24 && firing.rerun_mismatches == 0);
  CHECK_STATUS(peat_injector_clear_policies(injector), PEAT_STATUS_OK);
  policy.run_twice = 0;
  CHECK_STATUS(peat_injector_add_policy(injector, &policy, &index), PEAT_STATUS_OK);
  CHECK_STATUS(peat_injector_dispatch(injector, op, &in, 1, &out, 1, NULL, golden_copy, NULL, &action, NULL),
               PEAT_STATUS_OK);
  CHECK_STATUS(peat_injector_firing(injector, 2, &firing), PEAT_STATUS_OK);
  CHECK(firing.rerun_mismatches == -1);
  CHECK_STATUS(peat_injector_firing_rerun_signature(injector, 2, &rerun), PEAT_STATUS_NOT_FOUND);
  peat_injector_destroy(injector);
  peat_session_destroy(session);
}

static void test_names(void) {
  CHECK(strcmp(peat_inject_kind_name(PEAT_INJECT_BITFLIP), "bitflip") == 0);
  CHECK(strcmp(peat_inject_kind_name(PEAT_INJECT_ULP_NOISE), "ulp_noise") == 0);
  CHECK(strcmp(peat_inject_kind_name(99), "unknown") == 0);
  CHECK(strcmp(peat_error_model_name(PEAT_ERROR_MODEL_STUCK_AT), "STUCK_AT") == 0);
  CHECK(strcmp(peat_error_model_name(-4), "unknown") == 0);
  CHECK(strcmp(peat_action_name(PEAT_ACTION_RUN_BOTH), "run_both") == 0);
  CHECK(strcmp(peat_action_name(PEAT_ACTION_INVALID), "unknown") == 0);
}

static void test_inject(void) {
  peat_inject_spec_t spec;
  peat_inject_truth_t truth;
  DLTensor t = tensor_f32(g_out);
  DLTensor src = tensor_f32(g_in);
  double r = 0;
  int i;
  for (i = 0; i < 24; ++i) g_in[i] = (float)i + 0.5f;

  peat_inject_spec_init(NULL, PEAT_INJECT_BITFLIP); /* NULL-safe */
  peat_inject_truth_init(NULL);
  peat_inject_spec_init(&spec, PEAT_INJECT_STUCK_AT);
  CHECK(spec.struct_size == sizeof spec);
  spec.bit = 31;
  spec.stuck_value = 1; /* every element negative */
  peat_inject_truth_init(&truth);
  CHECK(truth.struct_size == sizeof truth);
  CHECK_STATUS(peat_inject_apply(&spec, &t, &src, 1, 2, 3, &truth), PEAT_STATUS_OK);
  CHECK(truth.changed == 24);
  CHECK(truth.model == PEAT_ERROR_MODEL_STUCK_AT);
  CHECK(truth.bit_flips[31] == 24);
  CHECK(g_out[5] == -5.5f);
  CHECK(truth.recorded == 24 && truth.changes[23].index == 23 && truth.changes[23].new_value == -23.5);
  CHECK_STATUS(peat_inject_apply(&spec, &t, NULL, 1, 2, 3, NULL), PEAT_STATUS_OK); /* already stuck: no change */

  /* misuse */
  CHECK_STATUS(peat_inject_apply(NULL, &t, NULL, 1, 2, 3, &truth), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_inject_apply(&spec, NULL, NULL, 1, 2, 3, &truth), PEAT_STATUS_INVALID_ARGUMENT);
  spec.bit = 32;
  CHECK_STATUS(peat_inject_apply(&spec, &t, NULL, 1, 2, 3, &truth), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(strstr(peat_last_error_message(), "spec.bit") != NULL);
  spec.bit = 1;
  spec.kind = 1234;
  CHECK_STATUS(peat_inject_apply(&spec, &t, NULL, 1, 2, 3, &truth), PEAT_STATUS_INVALID_ARGUMENT);
  spec.kind = PEAT_INJECT_STUCK_AT;
  spec.struct_size = 0;
  CHECK_STATUS(peat_inject_apply(&spec, &t, NULL, 1, 2, 3, &truth), PEAT_STATUS_VERSION_MISMATCH);
  spec.struct_size = sizeof spec + 16;
  CHECK_STATUS(peat_inject_apply(&spec, &t, NULL, 1, 2, 3, &truth), PEAT_STATUS_VERSION_MISMATCH);
  spec.struct_size = sizeof spec;
  truth.struct_size = 0;
  CHECK_STATUS(peat_inject_apply(&spec, &t, NULL, 1, 2, 3, &truth), PEAT_STATUS_VERSION_MISMATCH);
  truth.struct_size = sizeof truth + 8;
  CHECK_STATUS(peat_inject_apply(&spec, &t, NULL, 1, 2, 3, &truth), PEAT_STATUS_VERSION_MISMATCH);
  peat_inject_spec_init(&spec, PEAT_INJECT_REGION);
  spec.first = 4; /* rows [4, 5) of a 4-row view */
  peat_inject_truth_init(&truth);
  CHECK_STATUS(peat_inject_apply(&spec, &t, NULL, 1, 2, 3, &truth), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(strstr(peat_last_error_message(), "outside") != NULL);

  CHECK_STATUS(peat_inject_round_value(1.0 + 1.0 / 16, PEAT_FORMAT_FP8_E5M2, PEAT_ROUND_NEAREST_EVEN, 0, &r),
               PEAT_STATUS_OK);
  CHECK(r == 1.0);
  CHECK_STATUS(peat_inject_round_value(1.0, 5, PEAT_ROUND_NEAREST_EVEN, 0, &r), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_inject_round_value(1.0, PEAT_FORMAT_BF16, 2, 0, &r), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_inject_round_value(1.0, PEAT_FORMAT_BF16, 0, 2, &r), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_inject_round_value(1.0, PEAT_FORMAT_BF16, 0, 0, NULL), PEAT_STATUS_INVALID_ARGUMENT);
}

static void test_scheduler_and_dispatch(void) {
  peat_session_t* session = NULL;
  peat_injector_t* injector = NULL;
  peat_injector_options_t options;
  peat_injector_policy_t policy;
  peat_inject_spec_t spec;
  peat_firing_t firing;
  peat_signature_t signature;
  DLTensor in = tensor_f32(g_in), out = tensor_f32(g_out);
  uint32_t op = 0, index = 9;
  uint64_t call = 0, count = 0, dropped = 0;
  peat_action_t action = PEAT_ACTION_INVALID;
  int i, fired = 0;
  char path[64];

  peat_injector_options_init(NULL);
  peat_injector_policy_init(NULL);
  CHECK_STATUS(peat_session_create(NULL, &session), PEAT_STATUS_OK);
  CHECK_STATUS(peat_session_intern_op(session, "model.linear1", &op), PEAT_STATUS_OK);

  CHECK_STATUS(peat_injector_create(NULL, NULL, &injector), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_injector_create(session, NULL, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  peat_injector_options_init(&options);
  options.max_firings_logged = 0;
  CHECK_STATUS(peat_injector_create(session, &options, &injector), PEAT_STATUS_INVALID_ARGUMENT);
  options.max_firings_logged = 100;
  options.struct_size = sizeof options + 4;
  CHECK_STATUS(peat_injector_create(session, &options, &injector), PEAT_STATUS_VERSION_MISMATCH);
  options.struct_size = sizeof options;
  CHECK_STATUS(peat_injector_create(session, &options, &injector), PEAT_STATUS_OK);
  peat_injector_destroy(NULL);

  /* policies */
  peat_injector_policy_init(&policy);
  CHECK(policy.struct_size == sizeof policy && policy.every_n == 1 && policy.probability == 1.0);
  policy.op_pattern = "model.linear[0-9]";
  policy.every_n = 4;
  policy.phase_offset = 1;
  policy.action = PEAT_ACTION_RUN_BOTH;
  CHECK_STATUS(peat_injector_add_policy(injector, &policy, &index), PEAT_STATUS_OK);
  CHECK(index == 0);
  policy.op_pattern = "model.[";
  CHECK_STATUS(peat_injector_add_policy(injector, &policy, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  policy.op_pattern = "*";
  policy.every_n = 0;
  CHECK_STATUS(peat_injector_add_policy(injector, &policy, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(strstr(peat_last_error_message(), "every_n") != NULL);
  policy.every_n = 1;
  policy.phase_offset = 0;
  policy.probability = 2.0;
  CHECK_STATUS(peat_injector_add_policy(injector, &policy, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  policy.probability = 1.0;
  policy.action = 77;
  CHECK_STATUS(peat_injector_add_policy(injector, &policy, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  policy.action = PEAT_ACTION_INJECT;
  peat_inject_spec_init(&spec, PEAT_INJECT_BITFLIP);
  spec.bit = 70;
  policy.spec = &spec;
  CHECK_STATUS(peat_injector_add_policy(injector, &policy, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  policy.struct_size = 2;
  CHECK_STATUS(peat_injector_add_policy(injector, &policy, NULL), PEAT_STATUS_VERSION_MISMATCH);
  CHECK_STATUS(peat_injector_add_policy(NULL, &policy, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_injector_add_policy(injector, NULL, NULL), PEAT_STATUS_INVALID_ARGUMENT);

  /* decide */
  for (i = 0; i < 12; ++i) {
    action = peat_injector_decide(injector, op, &call);
    CHECK(call == (uint64_t)i);
    CHECK(action == (i % 4 == 1 ? PEAT_ACTION_RUN_BOTH : PEAT_ACTION_RUN_GOLDEN));
  }
  CHECK(peat_injector_decide(injector, op, NULL) == PEAT_ACTION_RUN_GOLDEN); /* call 12 */
  CHECK(peat_injector_decide(NULL, op, &call) == PEAT_ACTION_INVALID);
  CHECK(peat_last_error_message()[0] != '\0');
  CHECK(peat_injector_decide(injector, 4242, &call) == PEAT_ACTION_INVALID);
  CHECK(peat_injector_decide_call(injector, op, 5) == PEAT_ACTION_RUN_BOTH);
  CHECK(peat_injector_decide_call(injector, 4242, 5) == PEAT_ACTION_INVALID);
  CHECK(peat_injector_decide_call(NULL, op, 5) == PEAT_ACTION_INVALID);

  /* decide_policy + inject */
  {
    peat_inject_truth_t truth;
    int32_t fired_policy = 9;
    uint32_t inject_index = 0;
    peat_injector_policy_t inject_policy;
    peat_inject_spec_t flip;
    DLTensor t = tensor_f32(g_out);
    peat_inject_spec_init(&flip, PEAT_INJECT_BITFLIP);
    flip.bit = 31;
    peat_injector_policy_init(&inject_policy);
    inject_policy.op_pattern = "nothing.matches";
    inject_policy.action = PEAT_ACTION_INJECT;
    inject_policy.spec = &flip;
    CHECK_STATUS(peat_injector_add_policy(injector, &inject_policy, &inject_index), PEAT_STATUS_OK);
    CHECK(inject_index == 1);
    CHECK(peat_injector_decide_policy(injector, op, &call, &fired_policy) == PEAT_ACTION_RUN_BOTH); /* call 13 */
    CHECK(call == 13 && fired_policy == 0);
    CHECK(peat_injector_decide_policy(injector, op, &call, &fired_policy) == PEAT_ACTION_RUN_GOLDEN); /* call 14 */
    CHECK(call == 14 && fired_policy == -1);
    CHECK(peat_injector_decide_policy(injector, op, NULL, NULL) == PEAT_ACTION_RUN_GOLDEN); /* call 15 */
    CHECK(peat_injector_decide_policy(injector, op, &call, &fired_policy) == PEAT_ACTION_RUN_GOLDEN); /* call 16 */
    CHECK(peat_injector_decide_policy(NULL, op, &call, &fired_policy) == PEAT_ACTION_INVALID);
    for (i = 0; i < 24; ++i) g_out[i] = 1.0f;
    peat_inject_truth_init(&truth);
    CHECK_STATUS(peat_injector_inject(injector, 1, op, 3, &t, NULL, &truth), PEAT_STATUS_OK);
    CHECK(truth.changed == 1 && truth.changes[0].new_value == -1.0);
    CHECK_STATUS(peat_injector_inject(injector, 0, op, 3, &t, NULL, &truth), PEAT_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(peat_injector_inject(injector, 5, op, 3, &t, NULL, &truth), PEAT_STATUS_NOT_FOUND);
    CHECK_STATUS(peat_injector_inject(injector, 1, op, 3, NULL, NULL, &truth), PEAT_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(peat_injector_inject(NULL, 1, op, 3, &t, NULL, &truth), PEAT_STATUS_INVALID_ARGUMENT);
    truth.struct_size = 1;
    CHECK_STATUS(peat_injector_inject(injector, 1, op, 3, &t, NULL, &truth), PEAT_STATUS_VERSION_MISMATCH);
  }

  /* candidates */
  CHECK_STATUS(peat_injector_set_candidate(injector, "model.*", candidate_half, NULL), PEAT_STATUS_OK);
  CHECK_STATUS(peat_injector_set_candidate(NULL, "*", candidate_half, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_injector_set_candidate(injector, NULL, candidate_half, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_injector_set_candidate(injector, "*", NULL, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_injector_set_candidate(injector, "a\\", candidate_half, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_injector_set_candidate_symbol(injector, "other", PEAT_TEST_CANDIDATES ":peat_test_exact", NULL),
               PEAT_STATUS_OK);
  CHECK_STATUS(peat_injector_set_candidate_symbol(injector, "*", PEAT_TEST_CANDIDATES ":missing_symbol", NULL),
               PEAT_STATUS_NOT_FOUND);
  CHECK_STATUS(peat_injector_set_candidate_symbol(injector, "*", "/no/such/lib.so:f", NULL), PEAT_STATUS_NOT_FOUND);
  CHECK_STATUS(peat_injector_set_candidate_symbol(injector, "*", "nocolon", NULL), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_injector_set_candidate_symbol(injector, "*", NULL, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_injector_set_candidate_symbol(NULL, "*", "a.so:f", NULL), PEAT_STATUS_INVALID_ARGUMENT);

  /* dispatch: calls 17..24; call 17 and 21 fire (call % 4 == 1) */
  for (i = 0; i < 24; ++i) g_in[i] = (float)i;
  for (i = 0; i < 8; ++i) {
    memset(g_out, 0, sizeof g_out);
    CHECK_STATUS(peat_injector_dispatch(injector, op, &in, 1, &out, 1, NULL, golden_copy, NULL, &action, &call),
                 PEAT_STATUS_OK);
    fired += action == PEAT_ACTION_RUN_BOTH;
    CHECK(g_out[7] == 7.0f); /* golden propagates */
  }
  CHECK(fired == 2);
  CHECK_STATUS(peat_injector_dispatch(injector, op, &in, 1, &out, 1, NULL, NULL, NULL, &action, NULL),
               PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_injector_dispatch(NULL, op, &in, 1, &out, 1, NULL, golden_copy, NULL, NULL, NULL),
               PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_injector_dispatch(injector, op, &in, 1, NULL, 1, NULL, golden_copy, NULL, NULL, NULL),
               PEAT_STATUS_INVALID_ARGUMENT);

  /* the log */
  CHECK_STATUS(peat_injector_firing_count(injector, &count, &dropped), PEAT_STATUS_OK);
  CHECK(count == 2 && dropped == 0);
  CHECK_STATUS(peat_injector_firing_count(injector, &count, NULL), PEAT_STATUS_OK);
  CHECK_STATUS(peat_injector_firing_count(injector, NULL, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_injector_firing_count(NULL, &count, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  memset(&firing, 0, sizeof firing);
  firing.struct_size = sizeof firing;
  CHECK_STATUS(peat_injector_firing(injector, 1, &firing), PEAT_STATUS_OK);
  CHECK(firing.op == op && firing.call == 21 && firing.action == PEAT_ACTION_RUN_BOTH);
  CHECK(firing.compared == 1 && firing.mismatches == 23); /* 0.5 * 0 == 0 */
  CHECK(fabs(firing.max_abs_error - 11.5) < 1e-12);
  CHECK(fabs(firing.max_rel_error - 0.5) < 1e-12);
  CHECK_STATUS(peat_injector_firing(injector, 2, &firing), PEAT_STATUS_NOT_FOUND);
  CHECK_STATUS(peat_injector_firing(injector, 0, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_injector_firing(NULL, 0, &firing), PEAT_STATUS_INVALID_ARGUMENT);
  firing.struct_size = 0;
  CHECK_STATUS(peat_injector_firing(injector, 0, &firing), PEAT_STATUS_VERSION_MISMATCH);
  peat_signature_init(&signature);
  CHECK_STATUS(peat_injector_firing_signature(injector, 0, &signature), PEAT_STATUS_OK);
  CHECK(signature.count == 24 && signature.dropped_count == 0 && signature.ratio_count > 0);
  peat_signature_sums_t sums;
  sums.struct_size = sizeof sums;
  CHECK_STATUS(peat_signature_read_sums(&signature, &sums), PEAT_STATUS_OK);
  CHECK(fabs(sums.ratio_mean - 0.5) < 1e-12);
  CHECK_STATUS(peat_injector_firing_signature(injector, 5, &signature), PEAT_STATUS_NOT_FOUND);
  CHECK_STATUS(peat_injector_firing_signature(injector, 0, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_injector_firing_signature(NULL, 0, &signature), PEAT_STATUS_INVALID_ARGUMENT);
  signature.struct_size = sizeof signature + 8;
  CHECK_STATUS(peat_injector_firing_signature(injector, 0, &signature), PEAT_STATUS_VERSION_MISMATCH);

  snprintf(path, sizeof path, "c_test_injector_%d.jsonl", 1);
  CHECK_STATUS(peat_injector_write_log(injector, path, 0), PEAT_STATUS_OK);
  {
    FILE* file = fopen(path, "r");
    char line[1024];
    int lines = 0;
    CHECK(file != NULL);
    while (file && fgets(line, sizeof line, file)) {
      CHECK(strstr(line, "\"op_name\":\"model.linear1\"") != NULL);
      ++lines;
    }
    if (file) fclose(file);
    CHECK(lines == 2);
    remove(path);
  }
  CHECK_STATUS(peat_injector_write_log(injector, NULL, 0), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_injector_write_log(NULL, path, 0), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_injector_write_log(injector, "/nonexistent-dir/log.jsonl", 0), PEAT_STATUS_IO_ERROR);

  CHECK_STATUS(peat_injector_clear_policies(injector), PEAT_STATUS_OK);
  CHECK_STATUS(peat_injector_clear_policies(NULL), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(peat_injector_decide(injector, op, &call) == PEAT_ACTION_RUN_GOLDEN);
  CHECK(call == 25);

  peat_injector_destroy(injector);
  peat_session_destroy(session);
}

int main(void) {
  test_names();
  test_inject();
  test_scheduler_and_dispatch();
  test_run_twice();
  return check_report("injector");
}
