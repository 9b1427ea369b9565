/* Fault test: backend plugins that crash while loading or return malformed
 * tables. Each must be refused with a status and a message naming the file
 * and the reason, and this (host) process must survive every one of them and
 * keep working (the built-in CPU backend still serves, a good plugin still
 * loads). Usage: fault_plugins FAULT_PLUGIN_DIR TEST_PLUGIN_DIR */
#include <peat/peat.h>

#include <stdio.h>
#include <string.h>

static int failures = 0;

static void expect_refused(const char* dir, const char* file, peat_status_t want, const char* words) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  peat_backend_t* b = NULL;
  const peat_status_t st = peat_backend_load_file(path, &b);
  const char* msg = peat_last_error_message();
  const int ok = st == want && b == NULL && strstr(msg, file) != NULL && strstr(msg, words) != NULL;
  printf("%s %s -> %s: %s\n", ok ? "ok  " : "FAIL", file, peat_status_string(st), msg);
  if (!ok) {
    printf("     expected %s and a message containing '%s'\n", peat_status_string(want), words);
    ++failures;
  }
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s FAULT_PLUGIN_DIR TEST_PLUGIN_DIR\n", argv[0]);
    return 2;
  }
  const char* faults = argv[1];
  const char* plugins = argv[2];
  /* crashes in the plugin's code: the probe process dies, we do not */
  expect_refused(faults, "libpeat-backend-crashentry.so", PEAT_STATUS_UNAVAILABLE, "probe process");
  expect_refused(faults, "libpeat-backend-crashctor.so", PEAT_STATUS_UNAVAILABLE, "probe process");
  /* malformed tables */
  expect_refused(faults, "libpeat-backend-badsize.so", PEAT_STATUS_UNAVAILABLE, "struct_size 8");
  expect_refused(faults, "libpeat-backend-noname.so", PEAT_STATUS_UNAVAILABLE, "no name");
  expect_refused(plugins, "libpeat-backend-missingfn.so", PEAT_STATUS_UNAVAILABLE, "is NULL");
  expect_refused(plugins, "libpeat-backend-wrongabi.so", PEAT_STATUS_UNAVAILABLE, "ABI 99");
  expect_refused(plugins, "libpeat-backend-nulltable.so", PEAT_STATUS_UNAVAILABLE, "returned NULL");

  /* the host still works: built-in backend, and a good plugin loads */
  peat_backend_t* cpu = NULL;
  int32_t count = 0;
  if (peat_backend_get("cpu", &cpu) != PEAT_STATUS_OK || peat_backend_device_count(cpu, &count) != PEAT_STATUS_OK ||
      count < 1) {
    printf("FAIL the cpu backend no longer works: %s\n", peat_last_error_message());
    ++failures;
  }
  char good[4096];
  snprintf(good, sizeof good, "%s/libpeat-backend-testmem.so", plugins);
  peat_backend_t* b = NULL;
  if (peat_backend_load_file(good, &b) != PEAT_STATUS_OK || b == NULL || strcmp(peat_backend_name(b), "testmem") != 0) {
    printf("FAIL a good plugin no longer loads after the faulty ones: %s\n", peat_last_error_message());
    ++failures;
  } else {
    printf("ok   libpeat-backend-testmem.so still loads after the faulty ones\n");
  }
  printf("%s\n", failures ? "FAILED" : "all plugin faults refused, host alive");
  return failures ? 1 : 0;
}
