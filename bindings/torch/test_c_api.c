/* The C API of libpeat_torch (peat_torch.h) from C11: argument checks, the
 * errors of attach, path ids, phases, counters, attach after detach. Ops
 * themselves run through torch, so their recording is tested from Python
 * (tests/python/test_torch_native.py). */
#include "bindings/torch/peat_torch.h"
#include "tests/c_api/check.h"

#include <string.h>

static peat_torch_op_spec_t spec(const char* op) {
  peat_torch_op_spec_t s;
  memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  s.op = op;
  return s;
}

/* A failure with its status and a message from peat_torch_last_error. */
static void check_fails(peat_status_t got, peat_status_t want) {
  CHECK(got == want);
  CHECK(peat_torch_last_error()[0] != '\0');
}

int main(void) {
  CHECK(strchr(peat_torch_torch_version(), '.') != NULL);

  peat_session_t* session = NULL;
  CHECK_STATUS(peat_session_create(NULL, &session), PEAT_STATUS_OK);
  peat_torch_op_spec_t mm = spec("mm");
  peat_torch_hook_t* hook = NULL;

  check_fails(peat_torch_hook_attach(NULL, NULL, &mm, 1, 1, &hook), PEAT_STATUS_INVALID_ARGUMENT);
  check_fails(peat_torch_hook_attach(session, NULL, NULL, 1, 1, &hook), PEAT_STATUS_INVALID_ARGUMENT);
  peat_torch_op_spec_t unsized = spec("mm");
  unsized.struct_size = 0;
  check_fails(peat_torch_hook_attach(session, NULL, &unsized, 1, 1, &hook), PEAT_STATUS_INVALID_ARGUMENT);
  peat_torch_op_spec_t unknown = spec("not_an_op");
  check_fails(peat_torch_hook_attach(session, NULL, &unknown, 1, 1, &hook), PEAT_STATUS_NOT_FOUND);
  peat_torch_op_spec_t in_place = spec("add_");
  check_fails(peat_torch_hook_attach(session, NULL, &in_place, 1, 1, &hook), PEAT_STATUS_UNSUPPORTED);
  CHECK(hook == NULL);

  CHECK(peat_torch_hook_attach(session, NULL, &mm, 1, 1, &hook) == PEAT_STATUS_OK);
  CHECK(hook != NULL);
  peat_torch_hook_t* second = NULL;
  check_fails(peat_torch_hook_attach(session, NULL, &mm, 1, 1, &second), PEAT_STATUS_BAD_STATE);

  uint32_t root = 99, a = 0, again = 0;
  CHECK(peat_torch_path_intern(hook, "", &root) == PEAT_STATUS_OK && root == 0);
  CHECK(peat_torch_path_intern(hook, "layer1.0.conv1", &a) == PEAT_STATUS_OK && a == 1);
  CHECK(peat_torch_path_intern(hook, "layer1.0.conv1", &again) == PEAT_STATUS_OK && again == a);
  check_fails(peat_torch_path_intern(hook, NULL, &a), PEAT_STATUS_INVALID_ARGUMENT);
  peat_torch_module_enter(hook, a);
  peat_torch_module_exit(hook);
  peat_torch_module_exit(hook); /* unbalanced: ignored */
  peat_torch_module_enter(hook, a);
  peat_torch_module_reset(hook);
  peat_torch_module_enter(NULL, a); /* NULL-safe */

  check_fails(peat_torch_set_default_phase(hook, (peat_phase_t)99), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(peat_torch_set_default_phase(hook, PEAT_PHASE_OPTIMIZER) == PEAT_STATUS_OK);

  peat_torch_hook_stats_t stats;
  memset(&stats, 0, sizeof stats);
  check_fails(peat_torch_hook_stats(hook, &stats), PEAT_STATUS_INVALID_ARGUMENT); /* struct_size 0 */
  stats.struct_size = sizeof stats;
  CHECK(peat_torch_hook_stats(hook, &stats) == PEAT_STATUS_OK);
  CHECK(stats.ops_handled == 0 && stats.ops_recorded == 0 && stats.ops_unnamed_backward == 0);

  peat_torch_hook_detach(hook);
  peat_torch_hook_detach(NULL);
  hook = NULL;
  CHECK(peat_torch_hook_attach(session, NULL, &mm, 1, 0, &hook) == PEAT_STATUS_OK); /* again after detach */
  peat_torch_hook_detach(hook);
  peat_session_destroy(session);
  return check_report("torch_c_api");
}
