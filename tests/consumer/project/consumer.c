/* A program a user would write against an installed PEAT: creates a session on
 * the CPU backend and prints the library version. */
#include <peat/peat.h>

#include <stdio.h>

int main(void) {
  peat_session_t* session = NULL;
  if (peat_session_create(NULL, &session) != PEAT_STATUS_OK) {
    fprintf(stderr, "consumer: %s\n", peat_last_error_message());
    return 1;
  }
  uint32_t op = 0;
  peat_session_intern_op(session, "gemm", &op);
  printf("consumer: libpeat %s, op 'gemm' has id %u\n", peat_version_string(), op);
  peat_session_destroy(session);
  return 0;
}
