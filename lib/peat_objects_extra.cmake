# Extra build steps of libpeat's object library (included by lib/CMakeLists.txt).
#
# The trace format's metadata schema (lib/trace/trace.fbs) is compiled with
# flatc at build time into build/lib/generated/trace/trace_generated.h, which
# the trace code includes as "trace/trace_generated.h" (a SYSTEM include
# directory, so generated code is not held to our warning flags).
find_package(FlatBuffers REQUIRED)
set(PEAT_FBS ${CMAKE_CURRENT_SOURCE_DIR}/trace/trace.fbs)
set(PEAT_FBS_OUT_DIR ${CMAKE_CURRENT_BINARY_DIR}/generated/trace)
set(PEAT_FBS_HEADER ${PEAT_FBS_OUT_DIR}/trace_generated.h)
add_custom_command(
  OUTPUT ${PEAT_FBS_HEADER}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${PEAT_FBS_OUT_DIR}
  COMMAND flatbuffers::flatc --cpp --scoped-enums -o ${PEAT_FBS_OUT_DIR} ${PEAT_FBS}
  DEPENDS ${PEAT_FBS} flatbuffers::flatc
  COMMENT "flatc: compiling trace.fbs"
  VERBATIM)
add_custom_target(peat_trace_schema DEPENDS ${PEAT_FBS_HEADER})
add_dependencies(peat_objects peat_trace_schema)
target_sources(peat_objects PRIVATE ${PEAT_FBS_HEADER})
target_include_directories(peat_objects SYSTEM PRIVATE ${CMAKE_CURRENT_BINARY_DIR}/generated)
target_link_libraries(peat_objects PRIVATE flatbuffers::flatbuffers_shared)
# peat and peat_internal are defined after this file is included; link them
# to FlatBuffers once the directory has been processed.
cmake_language(DEFER CALL target_link_libraries peat PRIVATE flatbuffers::flatbuffers_shared)
cmake_language(DEFER CALL target_link_libraries peat_internal PUBLIC flatbuffers::flatbuffers_shared)
cmake_language(DEFER CALL target_include_directories peat_internal SYSTEM PUBLIC
               ${CMAKE_CURRENT_BINARY_DIR}/generated)
cmake_language(DEFER CALL add_dependencies peat_internal peat_trace_schema)
