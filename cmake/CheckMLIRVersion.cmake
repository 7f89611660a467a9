#===- CheckMLIRVersion.cmake - refuse an MLIR other than the pinned one ----===#
#
# The dialects and passes are written against the MLIR 22 C++ API, which is not
# stable across major versions. Stopping at configure time with the found and
# expected versions beats a wall of template errors halfway through the build.
#
#===------------------------------------------------------------------------===#

function(gdn_check_mlir_version)
  file(STRINGS "${CMAKE_CURRENT_SOURCE_DIR}/build_tools/llvm_version.txt" pinned
       LIMIT_COUNT 1)
  if(NOT LLVM_VERSION_MAJOR EQUAL 22)
    message(FATAL_ERROR
      "gdn-compiler needs ${pinned}, but found LLVM/MLIR ${LLVM_PACKAGE_VERSION} "
      "at ${MLIR_DIR}. Install it with scripts/install-deps.sh and pass "
      "-DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir.")
  endif()
  if(NOT LLVM_PACKAGE_VERSION VERSION_EQUAL 22.1.8)
    message(WARNING "gdn-compiler is tested with ${pinned}; found "
                    "${LLVM_PACKAGE_VERSION}. Continuing.")
  endif()
endfunction()
