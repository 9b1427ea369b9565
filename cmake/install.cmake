# Installation: headers, libpeat (+ SONAME link), peatConfig.cmake exporting
# peat::peat, peat.pc, and whatever plugins and tools the build made.
include(CMakePackageConfigHelpers)

install(TARGETS peat EXPORT peatTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/peat DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT peatTargets NAMESPACE peat:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/peat)

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/peatConfig.cmake.in
  ${PROJECT_BINARY_DIR}/peatConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/peat)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/peatConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/peatConfig.cmake ${PROJECT_BINARY_DIR}/peatConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/peat)

configure_file(${PROJECT_SOURCE_DIR}/cmake/peat.pc.in ${PROJECT_BINARY_DIR}/peat.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/peat.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
