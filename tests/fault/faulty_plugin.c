/* Backend plugins that fail while loading, each variant a real shared object
 * (FAULT_<VARIANT> defined by tests/fault/CMakeLists.txt):
 *   crashentry  its entry point dereferences NULL (SIGSEGV)
 *   crashctor   a static initialiser aborts (SIGABRT) during dlopen
 *   badsize     its table's struct_size is 8 bytes
 *   noname      its table has a NULL name (and NULL required entries)
 * The registry must refuse each with a status and a message while the host
 * process goes on. */
#include <peat/backend.h>

#include <signal.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

static peat_backend_api_t table;

#if defined(FAULT_CRASHCTOR)
__attribute__((constructor)) static void explode(void) { abort(); }
#endif

EXPORT const peat_backend_api_t* peat_backend_get_api(uint32_t abi_major) {
#if defined(FAULT_CRASHENTRY)
  volatile int* volatile nowhere = NULL;
  *nowhere = (int)abi_major; /* SIGSEGV */
#endif
  memset(&table, 0, sizeof table);
  table.abi_major = abi_major;
  table.struct_size = sizeof table;
  table.name = "faulty";
#if defined(FAULT_BADSIZE)
  table.struct_size = 8;
#elif defined(FAULT_NONAME)
  table.name = NULL;
#endif
  return &table;
}
