#===- GDNInstall.cmake - the installed find_package(GDN) package -----------===#
#
# `cmake --install build --prefix P` lays out
#   P/bin/            gdn-opt, gdn-run, gdn-translate (and gdnrt-launch)
#   P/include/gdn/    the C++ headers with their ODS-generated .inc, the C ABI
#                     of generated code and the device header library
#   P/include/gdn-c/  the C API
#   P/lib/            the libraries, libGDNCAPI.so (and gdnrt)
#   P/lib/cmake/gdn/  GDNConfig.cmake, GDNConfigVersion.cmake, GDNTargets.cmake
# Included last from the top-level CMakeLists.txt, once every installed
# target exists.
#
#===------------------------------------------------------------------------===#

include(CMakePackageConfigHelpers)

set(GDN_INSTALL_PACKAGE_DIR "${GDN_INSTALL_LIBDIR}/cmake/gdn")

# Headers: the sources, and the .inc files tablegen writes next to them in
# the build tree. kernels/include/gdn (the CUDA kernel headers) and
# runtime/include/gdn (gdnrt's) merge into the same include/gdn.
install(DIRECTORY ${GDN_SOURCE_DIR}/include/gdn ${GDN_SOURCE_DIR}/include/gdn-c
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT gdn-headers
  FILES_MATCHING PATTERN "*.h")
install(DIRECTORY ${GDN_BINARY_DIR}/include/gdn ${GDN_BINARY_DIR}/include/gdn-c
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT gdn-headers
  FILES_MATCHING PATTERN "*.inc" PATTERN "CMakeFiles" EXCLUDE)
install(DIRECTORY ${GDN_SOURCE_DIR}/kernels/include/gdn ${GDN_SOURCE_DIR}/runtime/include/gdn
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT gdn-headers
  FILES_MATCHING PATTERN "*.h" PATTERN "*.cuh")

# The runtime exists only where the CUDA toolkit and NCCL do
# (runtime/CMakeLists.txt). It is plain C++ over CUDA, not an MLIR library:
# its own include directories are already install-ready, and consumers need
# CUDA::cudart, so GDNConfig.cmake finds the CUDA toolkit when it is here.
set(GDN_PACKAGE_HAS_GDNRT OFF)
if(TARGET gdnrt)
  install(TARGETS gdnrt EXPORT GDNTargets
    LIBRARY DESTINATION ${GDN_INSTALL_LIBDIR} COMPONENT gdnrt
    ARCHIVE DESTINATION ${GDN_INSTALL_LIBDIR} COMPONENT gdnrt)
  set(GDN_PACKAGE_HAS_GDNRT ON)
endif()
if(TARGET gdnrt-launch)
  gdn_install_tool(gdnrt-launch)
endif()
# The one-command build flow (gdn-opt, gdn-translate, nvcc, linked to
# gdnrt); installed, it finds its tools, headers and gdnrt in the prefix.
if(TARGET gdnrt)
  install(PROGRAMS ${GDN_SOURCE_DIR}/scripts/gdn-compile
    DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT gdnrt)
endif()

# The MLIR-based libraries, to which GDNConfig.cmake adds MLIR's includes.
get_property(GDN_EXPORTED_LIBS GLOBAL PROPERTY GDN_EXPORTED_LIBS)

install(EXPORT GDNTargets NAMESPACE GDN::
  DESTINATION ${GDN_INSTALL_PACKAGE_DIR} COMPONENT gdn-cmake-exports)

set(package_build_dir ${GDN_BINARY_DIR}/${GDN_INSTALL_PACKAGE_DIR})
configure_package_config_file(
  ${GDN_SOURCE_DIR}/cmake/GDNConfig.cmake.in
  ${package_build_dir}/GDNConfig.cmake
  INSTALL_DESTINATION ${GDN_INSTALL_PACKAGE_DIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_BINDIR)
# 0.x: a minor version may change the C++ and C APIs.
write_basic_package_version_file(${package_build_dir}/GDNConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES
  ${package_build_dir}/GDNConfig.cmake
  ${package_build_dir}/GDNConfigVersion.cmake
  DESTINATION ${GDN_INSTALL_PACKAGE_DIR} COMPONENT gdn-cmake-exports)
