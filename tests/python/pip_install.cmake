# pip installs bindings/python (offline, with Debian's setuptools) into a scratch
# folder, then imports the installed package there and checks the library version.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
file(COPY ${SOURCE}/ DESTINATION ${WORK}/src PATTERN "__pycache__" EXCLUDE PATTERN "*.egg-info" EXCLUDE PATTERN "build" EXCLUDE)
execute_process(COMMAND ${PYTHON} -m pip install --quiet --no-build-isolation --no-index --no-deps
                        --target ${WORK}/site ${WORK}/src
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "pip install bindings/python failed (${rc})")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E env PYTHONPATH=${WORK}/site PEAT_LIBRARY=${LIBRARY}
                        ${PYTHON} -c "import peat, sys; assert peat.__file__.startswith('${WORK}/site'), peat.__file__; assert peat.version_number() == 200; print(peat.version())"
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the pip-installed package does not import (${rc})")
endif()
