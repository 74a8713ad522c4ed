# Install rules and the CMake package (docs/package.md): `cmake --install build --prefix P`
# puts the passcheck binary in P/bin, the Python package passcheck_fx in
# P/share/passcheck/python (where the binary looks for it), the static libraries in P/lib, every public header
# under P/include/passcheck with its tree path (#include "framework/ir/graph.h"), and
# P/lib/cmake/passcheck/passcheckConfig.cmake exporting the libraries as passcheck::<name>.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# Library target -> exported name (passcheck::<name>).
set(PASSCHECK_EXPORTED_LIBRARIES
  passcheck_torch_pch:torch_pch passcheck_io:io passcheck_ir:ir passcheck_sym:sym passcheck_exec:exec
  passcheck_dist:dist passcheck_trace:trace passcheck_check:check passcheck_report:report passcheck_graph_tools:graph_tools
  passcheck_oracles:oracles passcheck_passes:passes passcheck_generators:generators
  passcheck_campaign:campaign passcheck_mutants:mutants passcheck_python_bridge:python_bridge passcheck_gate:gate
  passcheck_bench:bench passcheck_distributed:distributed)
if(TARGET passcheck_test_support)
  list(APPEND PASSCHECK_EXPORTED_LIBRARIES passcheck_test_support:test_support)
endif()

set(PASSCHECK_INSTALLED_TARGETS)
foreach(entry ${PASSCHECK_EXPORTED_LIBRARIES})
  string(REPLACE ":" ";" pair ${entry})
  list(GET pair 0 target)
  list(GET pair 1 exported)
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${exported})
  # Alias under the exported name, so code written against the package builds in-tree too.
  add_library(passcheck::${exported} ALIAS ${target})
  list(APPEND PASSCHECK_INSTALLED_TARGETS ${target})
endforeach()

install(TARGETS passcheck RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/python/passcheck_fx DESTINATION ${CMAKE_INSTALL_DATADIR}/passcheck/python
        PATTERN __pycache__ EXCLUDE)
install(TARGETS ${PASSCHECK_INSTALLED_TARGETS} EXPORT passcheckTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/passcheck)

# Headers keep their paths in the tree.
foreach(dir framework oracles passes generators workflows suites/mutants suites/support)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${dir}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/passcheck/${dir}
          FILES_MATCHING PATTERN "*.h")
endforeach()
install(FILES ${CMAKE_BINARY_DIR}/generated/framework/version.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/passcheck/framework)

install(EXPORT passcheckTargets NAMESPACE passcheck:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/passcheck)
set(PASSCHECK_CONFIG_WITH_TESTS ${PASSCHECK_BUILD_TESTS})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/passcheckConfig.cmake.in
                              ${CMAKE_BINARY_DIR}/cmake/passcheckConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/passcheck)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/cmake/passcheckConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/cmake/passcheckConfig.cmake ${CMAKE_BINARY_DIR}/cmake/passcheckConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/passcheck)
