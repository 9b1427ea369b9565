# Installs the build tree into a scratch prefix, then, as a user would and
# without LD_LIBRARY_PATH: configures, builds and runs a consumer project with
# find_package(peat); builds one with the flags of pkg-config alone (which
# declare the DLPack headers and the rpath); builds one against the installed
# example candidates; imports the installed Python package with the system
# Python (it must load the prefix's libpeat). Run by ctest with -P; fails
# (FATAL_ERROR) on any step.
#   -DPEAT_BUILD_DIR= -DPEAT_CONSUMER_DIR= -DWORK_DIR= -DCMAKE_GENERATOR= [-DPYTHON=]
set(prefix ${WORK_DIR}/prefix)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
# No LD_LIBRARY_PATH and no PEAT_LIBRARY: what is found must come from the prefix.
unset(ENV{LD_LIBRARY_PATH})
unset(ENV{PEAT_LIBRARY})

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "command failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

run(${CMAKE_COMMAND} --install ${PEAT_BUILD_DIR} --prefix ${prefix})
set(required include/peat/peat.h include/peat/peat.hpp lib/cmake/peat/peatConfig.cmake lib/pkgconfig/peat.pc)
if(EXISTS ${PEAT_BUILD_DIR}/python/_installed.py)  # PEAT_INSTALL_PYTHON
  list(APPEND required lib/python3/dist-packages/peat/__init__.py lib/python3/dist-packages/peat/_installed.py)
endif()
if(EXISTS ${PEAT_BUILD_DIR}/examples/candidates)
  list(APPEND required lib/libpeat_candidates.so include/peat/examples/peat_candidates.h
       include/peat/examples/peat_gemm_kernel.h)
endif()
foreach(file IN LISTS required)
  if(NOT EXISTS ${prefix}/${file})
    message(FATAL_ERROR "install is missing ${file}")
  endif()
endforeach()

# 1. CMake consumer: find_package(peat) + target peat::peat.
run(${CMAKE_COMMAND} -S ${PEAT_CONSUMER_DIR} -B ${WORK_DIR}/cmake-build -G ${CMAKE_GENERATOR}
    -DCMAKE_PREFIX_PATH=${prefix})
run(${CMAKE_COMMAND} --build ${WORK_DIR}/cmake-build)
run(${WORK_DIR}/cmake-build/consumer)
if(NOT last_output MATCHES "consumer: libpeat ${PEAT_VERSION}")
  message(FATAL_ERROR "find_package consumer printed: ${last_output}")
endif()

# 2. pkg-config consumer: cc consumer.c $(pkg-config --cflags --libs peat), nothing else.
set(ENV{PKG_CONFIG_PATH} ${prefix}/lib/pkgconfig)
run(pkg-config --variable=dlpack_includedir peat)
string(STRIP "${last_output}" dlpack_dir)
if(NOT EXISTS "${dlpack_dir}/dlpack/dlpack.h")
  message(FATAL_ERROR "peat.pc: dlpack_includedir '${dlpack_dir}' holds no dlpack/dlpack.h")
endif()
run(pkg-config --cflags --libs peat)
string(STRIP "${last_output}" flags)
if(NOT flags MATCHES "-Wl,-rpath,")
  message(FATAL_ERROR "pkg-config --libs peat gives no rpath: ${flags}")
endif()
separate_arguments(flags UNIX_COMMAND "${flags}")
run(cc -std=c11 -Wall -Werror ${PEAT_CONSUMER_DIR}/consumer.c ${flags} -o ${WORK_DIR}/pkgconfig-consumer)
run(${WORK_DIR}/pkgconfig-consumer)
if(NOT last_output MATCHES "consumer: libpeat ${PEAT_VERSION}")
  message(FATAL_ERROR "pkg-config consumer printed: ${last_output}")
endif()

# 3. The example candidates: their header and library from the prefix.
if(EXISTS ${prefix}/lib/libpeat_candidates.so)
  run(cc -std=c11 -Wall -Werror ${PEAT_CONSUMER_DIR}/../candidates_consumer.c ${flags}
      -lpeat_candidates -o ${WORK_DIR}/candidates-consumer)
  run(${WORK_DIR}/candidates-consumer)
  if(NOT last_output MATCHES "candidates: sequential 0\\.333333343, bf16 0\\.333984375")
    message(FATAL_ERROR "candidates consumer printed: ${last_output}")
  endif()
endif()

# 4. The Python package: import peat from the prefix with the system Python, from
# outside the source tree; it loads the prefix's libpeat and runs a noise band.
if(PYTHON AND EXISTS ${PYTHON} AND EXISTS ${prefix}/lib/python3/dist-packages/peat/_installed.py)
  file(REAL_PATH ${prefix} real_prefix)
  set(script "import peat, sys
assert peat.__file__.startswith('${real_prefix}/lib/python3/dist-packages/peat/'), peat.__file__
assert peat.library_path.startswith('${real_prefix}/lib/'), peat.library_path
band = peat.NoiseBand.from_runs([[3.0, 2.0, 1.0], [3.1, 2.1, 1.05]], window=1)
assert band.judge([3.0, 2.0, 1.0]).verdict == peat.INSIDE_NOISE
print('python: peat', peat.version(), 'from', peat.library_path)")
  execute_process(COMMAND ${CMAKE_COMMAND} -E env PYTHONPATH=${prefix}/lib/python3/dist-packages PYTHONDONTWRITEBYTECODE=1
                          ${PYTHON} -c "${script}"
                  WORKING_DIRECTORY ${WORK_DIR} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR NOT out MATCHES "python: peat ${PEAT_VERSION}")
    message(FATAL_ERROR "import peat from the prefix failed (${rc}):\n${out}\n${err}")
  endif()
  message(STATUS "${out}")
endif()
message(STATUS "the consumers built and ran against ${prefix} without LD_LIBRARY_PATH")
