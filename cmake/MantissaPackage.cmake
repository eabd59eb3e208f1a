# The SDK as an installed CMake package: find_package(Mantissa 0.2 COMPONENTS ...) with one
# export set per library, so that a program asking for the engine alone needs no Qt
# (docs/embedding.md). Included by the top-level CMakeLists after the libraries exist.
include(CMakePackageConfigHelpers)
set(_package_dir ${CMAKE_INSTALL_LIBDIR}/cmake/Mantissa)

# The components this build installs, in dependency order; stats and sweep are support
# libraries of report, loaded with it, not components a program asks for.
set(MANTISSA_PACKAGE_COMPONENTS engine)
set(_export_sets Engine)
if(MANTISSA_BUILD_UI)
  list(APPEND MANTISSA_PACKAGE_COMPONENTS storage report workbench)
  list(APPEND _export_sets Stats Storage Sweep Report Workbench)
endif()
foreach(set IN LISTS _export_sets)
  install(EXPORT Mantissa${set}Targets NAMESPACE Mantissa:: DESTINATION ${_package_dir} COMPONENT dev)
endforeach()

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/MantissaConfig.cmake.in
  ${PROJECT_BINARY_DIR}/MantissaConfig.cmake INSTALL_DESTINATION ${_package_dir})
# While the version is 0.x, a minor release may change the API (docs/embedding.md):
# find_package(Mantissa 0.2) accepts 0.2.x only, any patch release at or above the one asked for.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/MantissaConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/MantissaConfig.cmake ${PROJECT_BINARY_DIR}/MantissaConfigVersion.cmake
  DESTINATION ${_package_dir} COMPONENT dev)
