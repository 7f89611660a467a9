# Sourced by utils/fuzz.sh and utils/sanitize.sh: how the sanitized
# tree's programs report.
#
# Debian's libMLIR.so is not instrumented but shares std containers and
# LLVM's bump allocators with the project's code, whose annotations ASan
# would misread (the project's inline copy of the allocator poisons a slab
# that libMLIR.so's copy then allocates from without unpoisoning): those two
# kinds of check are off. Everything else reports, with a stack, and stops
# the program; LeakSanitizer is on, with the suppressions beside this file.
export ASAN_OPTIONS="detect_container_overflow=0:allow_user_poisoning=0:detect_leaks=1:halt_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export LSAN_OPTIONS="suppressions=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lsan-suppressions.txt"
