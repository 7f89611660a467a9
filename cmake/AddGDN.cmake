#===- AddGDN.cmake - thin wrappers over the MLIR CMake helpers -------------===#
#
# One place decides how project libraries link MLIR: against libMLIR.so when
# GDN_LINK_MLIR_DYLIB is on (fast links on small machines), or the static
# archives otherwise. Libraries register themselves in global lists so tools
# can link "all dialects" and "all passes" without naming each one.
#
#===------------------------------------------------------------------------===#

# add_gdn_library(name sources... [DEPENDS targets] [MLIR_LIBS libs] [LINK_LIBS libs])
function(add_gdn_library name)
  cmake_parse_arguments(ARG "" "" "DEPENDS;MLIR_LIBS;LINK_LIBS" ${ARGN})
  # Installation and the exported CMake package come with the packaging work;
  # until then the libraries stay in the build tree.
  add_mlir_library(${name} ${ARG_UNPARSED_ARGUMENTS} DISABLE_INSTALL
    DEPENDS ${ARG_DEPENDS}
    LINK_LIBS PUBLIC ${ARG_LINK_LIBS})
  # In dylib mode MLIR dependencies must come from libMLIR.so only; naming the
  # static archives in LINK_LIBS would put two copies of MLIR in one binary.
  mlir_target_link_libraries(${name} PUBLIC ${ARG_MLIR_LIBS})
endfunction()

function(add_gdn_dialect_library name)
  add_gdn_library(${name} ${ARGN})
  set_property(GLOBAL APPEND PROPERTY GDN_DIALECT_LIBS ${name})
endfunction()

function(add_gdn_pass_library name)
  add_gdn_library(${name} ${ARGN})
  set_property(GLOBAL APPEND PROPERTY GDN_PASS_LIBS ${name})
endfunction()
