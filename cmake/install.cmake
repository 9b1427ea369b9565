# Installation: headers, libpeat (+ SONAME link), peatConfig.cmake exporting
# peat::peat, peat.pc, the Python package, and whatever plugins, tools and
# example candidates (examples/candidates) the build made.
include(CMakePackageConfigHelpers)

install(TARGETS peat EXPORT peatTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/peat DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT peatTargets NAMESPACE peat:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/peat)

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/peatConfig.cmake.in
  ${PROJECT_BINARY_DIR}/peatConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/peat)
# A newer minor release serves a request for an older one: minor releases only
# add (docs/abi-policy.md; the SONAME changes on an incompatible change).
write_basic_package_version_file(${PROJECT_BINARY_DIR}/peatConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/peatConfig.cmake ${PROJECT_BINARY_DIR}/peatConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/peat)

# peat.pc declares the DLPack headers the public headers include: through
# Requires when DLPack has a .pc file of its own, else through its include
# directory (dlpack_includedir, in Cflags).
get_target_property(_dlpack_dirs dlpack::dlpack INTERFACE_INCLUDE_DIRECTORIES)
list(GET _dlpack_dirs 0 PEAT_DLPACK_INCLUDEDIR)
pkg_check_modules(PEAT_PC_DLPACK QUIET dlpack)
set(PEAT_PC_REQUIRES "")
if(PEAT_PC_DLPACK_FOUND)
  set(PEAT_PC_REQUIRES "Requires: dlpack")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/peat.pc.in ${PROJECT_BINARY_DIR}/peat.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/peat.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# The Python package (bindings/python/peat), importable from the prefix with
# PYTHONPATH=<prefix>/${PEAT_PYTHON_INSTALL_DIR}; _installed.py tells it where
# this prefix's libpeat is, relative to the package.
option(PEAT_INSTALL_PYTHON "Install the Python package (bindings/python/peat)" ON)
set(PEAT_PYTHON_INSTALL_DIR "lib/python3/dist-packages" CACHE STRING
    "Where the Python package is installed (relative to the prefix, or absolute)")
if(PEAT_INSTALL_PYTHON)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/bindings/python/peat DESTINATION ${PEAT_PYTHON_INSTALL_DIR}
          PATTERN "__pycache__" EXCLUDE PATTERN "*.pyc" EXCLUDE)
  if(IS_ABSOLUTE "${PEAT_PYTHON_INSTALL_DIR}" OR IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
    set(PEAT_PYTHON_LIBRARY "${CMAKE_INSTALL_FULL_LIBDIR}/libpeat.so.${PEAT_ABI_VERSION}")
  else()
    file(RELATIVE_PATH _rel "/prefix/${PEAT_PYTHON_INSTALL_DIR}/peat" "/prefix/${CMAKE_INSTALL_LIBDIR}")
    string(REGEX REPLACE "/$" "" _rel "${_rel}")
    set(PEAT_PYTHON_LIBRARY "${_rel}/libpeat.so.${PEAT_ABI_VERSION}")
  endif()
  file(CONFIGURE OUTPUT ${PROJECT_BINARY_DIR}/python/_installed.py CONTENT
"\"\"\"Installed with the package by cmake --install: where the prefix's libpeat is (relative to
this package's directory, or absolute).\"\"\"
LIBRARY = \"@PEAT_PYTHON_LIBRARY@\"
" @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/python/_installed.py DESTINATION ${PEAT_PYTHON_INSTALL_DIR}/peat)
endif()
