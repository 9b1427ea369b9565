/* Loads the CUPTI launch tracer the way the CUDA driver does for
 * CUDA_INJECTION64_PATH (dlopen, then InitializeInjection) and exits; the test
 * script checks the report the tracer writes at exit. */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    printf("cannot load %s: %s\n", argv[1], dlerror());
    return 1;
  }
  int (*init)(void) = (int (*)(void))dlsym(lib, "InitializeInjection");
  if (init == NULL) {
    printf("InitializeInjection is not exported\n");
    return 1;
  }
  const int rc = init();
  printf("InitializeInjection returned %d\n", rc);
  return rc == 1 ? 0 : 1;
}
