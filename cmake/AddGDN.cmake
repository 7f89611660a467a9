#===- AddGDN.cmake - thin wrappers over the MLIR CMake helpers -------------===#
#
# One place decides how project libraries link MLIR: against libMLIR.so when
# GDN_LINK_MLIR_DYLIB is on (fast links on small machines), or the static
# archives otherwise. Libraries register themselves in global lists so tools
# can link "all dialects" and "all passes" without naming each one, and are
# installed into the GDNTargets export set that cmake/GDNInstall.cmake turns
# into the find_package(GDN) package.
#
#===------------------------------------------------------------------------===#

include(GNUInstallDirs)

# lib/, not GNUInstallDirs' libdir: the tools' run path is $ORIGIN/../lib.
set(GDN_INSTALL_LIBDIR "lib${LLVM_LIBDIR_SUFFIX}")

# gdn_install_library(name): installs a library into the GDNTargets export
# set. MLIR's own install rule (add_mlir_library without DISABLE_INSTALL)
# would export it into MLIRTargets, MLIR's package, so the GDN libraries use
# this one instead. Consumers get the installed include/ from the target.
function(gdn_install_library name)
  target_include_directories(${name} INTERFACE
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  install(TARGETS ${name} EXPORT GDNTargets
    ARCHIVE DESTINATION ${GDN_INSTALL_LIBDIR} COMPONENT gdn-libraries
    LIBRARY DESTINATION ${GDN_INSTALL_LIBDIR} COMPONENT gdn-libraries
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT gdn-libraries)
  set_property(GLOBAL APPEND PROPERTY GDN_EXPORTED_LIBS ${name})
endfunction()

# gdn_install_tool(name): installs a tool into bin/ and exports it as
# GDN::name, so that consumers can run it from their own tests.
function(gdn_install_tool name)
  install(TARGETS ${name} EXPORT GDNTargets
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT gdn-tools)
endfunction()

# add_gdn_library(name sources... [DEPENDS targets] [MLIR_LIBS libs] [LINK_LIBS libs])
function(add_gdn_library name)
  cmake_parse_arguments(ARG "" "" "DEPENDS;MLIR_LIBS;LINK_LIBS" ${ARGN})
  # DISABLE_INSTALL turns off MLIR's install rule only; gdn_install_library
  # below installs the library into GDN's own package.
  add_mlir_library(${name} ${ARG_UNPARSED_ARGUMENTS} DISABLE_INSTALL
    DEPENDS ${ARG_DEPENDS}
    LINK_LIBS PUBLIC ${ARG_LINK_LIBS})
  # In dylib mode MLIR dependencies must come from libMLIR.so only; naming the
  # static archives in LINK_LIBS would put two copies of MLIR in one binary.
  mlir_target_link_libraries(${name} PUBLIC ${ARG_MLIR_LIBS})
  # The headers of the C++ libraries need C++17 in consumers too.
  target_compile_features(${name} INTERFACE cxx_std_17)
  gdn_install_library(${name})
endfunction()

function(add_gdn_dialect_library name)
  add_gdn_library(${name} ${ARGN})
  set_property(GLOBAL APPEND PROPERTY GDN_DIALECT_LIBS ${name})
endfunction()

function(add_gdn_pass_library name)
  add_gdn_library(${name} ${ARGN})
  set_property(GLOBAL APPEND PROPERTY GDN_PASS_LIBS ${name})
endfunction()
