# Runs a Python example in its short mode and checks what it prints: every
# regular expression of EXPECT must match the output, none of FORBID may.
# EXPECT and FORBID separate their expressions with "@@" (a regex may hold ";").
#   cmake -DPYTHON=... -DSCRIPT=... -DARGS="a@@b" -DEXPECT="re1@@re2" -DFORBID="re"
#         -DENV="K=V@@K2=V2" -P run_example.cmake
string(REPLACE "@@" ";" args "${ARGS}")
string(REPLACE "@@" ";" expect "${EXPECT}")
string(REPLACE "@@" ";" forbid "${FORBID}")
string(REPLACE "@@" ";" env "${ENV}")
execute_process(COMMAND ${CMAKE_COMMAND} -E env ${env} ${PYTHON} ${SCRIPT} ${args}
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
message("${out}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${SCRIPT} exited with ${rc}:\n${err}")
endif()
foreach(re IN LISTS expect)
  if(NOT out MATCHES "${re}")
    message(FATAL_ERROR "${SCRIPT}: no line of its output matches '${re}'")
  endif()
endforeach()
foreach(re IN LISTS forbid)
  if(out MATCHES "${re}")
    message(FATAL_ERROR "${SCRIPT}: its output matches '${re}', which it must not")
  endif()
endforeach()
