# Installs the build tree into a scratch prefix, then configures, builds and runs
# two tiny consumer projects against it: one with find_package(peat), one with
# pkg-config. Run by ctest with -P; fails (FATAL_ERROR) on any step.
set(prefix ${WORK_DIR}/prefix)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "command failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

run(${CMAKE_COMMAND} --install ${PEAT_BUILD_DIR} --prefix ${prefix})
foreach(required include/peat/peat.h include/peat/peat.hpp lib/cmake/peat/peatConfig.cmake lib/pkgconfig/peat.pc)
  if(NOT EXISTS ${prefix}/${required})
    message(FATAL_ERROR "install is missing ${required}")
  endif()
endforeach()

# 1. CMake consumer: find_package(peat) + target peat::peat.
run(${CMAKE_COMMAND} -S ${PEAT_CONSUMER_DIR} -B ${WORK_DIR}/cmake-build -G ${CMAKE_GENERATOR}
    -DCMAKE_PREFIX_PATH=${prefix})
run(${CMAKE_COMMAND} --build ${WORK_DIR}/cmake-build)
run(${WORK_DIR}/cmake-build/consumer)
if(NOT last_output MATCHES "consumer: libpeat 0\\.1")
  message(FATAL_ERROR "find_package consumer printed: ${last_output}")
endif()

# 2. pkg-config consumer: cc $(pkg-config --cflags --libs peat).
set(ENV{PKG_CONFIG_PATH} ${prefix}/lib/pkgconfig)
run(pkg-config --cflags --libs peat)
string(STRIP "${last_output}" flags)
separate_arguments(flags UNIX_COMMAND "${flags}")
run(cc -std=c11 -Wall -Werror ${PEAT_CONSUMER_DIR}/consumer.c ${flags} -Wl,-rpath,${prefix}/lib
    -o ${WORK_DIR}/pkgconfig-consumer)
run(${WORK_DIR}/pkgconfig-consumer)
if(NOT last_output MATCHES "consumer: libpeat 0\\.1")
  message(FATAL_ERROR "pkg-config consumer printed: ${last_output}")
endif()
message(STATUS "both consumers built and ran against ${prefix}")
