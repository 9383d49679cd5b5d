# Sourced by the sanitizer jobs: every finding fails the test that caused it, with a symbolized
# stack. Suppressions (tests/sanitizers/) name third-party code only, each with its reason.
root="$(pwd)"
symbolizer=/usr/lib/llvm-16/bin/llvm-symbolizer
export ASAN_OPTIONS="abort_on_error=1:detect_leaks=1:strict_string_checks=1:check_initialization_order=1:detect_stack_use_after_return=1:external_symbolizer_path=$symbolizer"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:external_symbolizer_path=$symbolizer"
export LSAN_OPTIONS="suppressions=$root/tests/sanitizers/lsan.supp:print_suppressions=0"
export TSAN_OPTIONS="halt_on_error=1:ignore_noninstrumented_modules=1:second_deadlock_stack=1:suppressions=$root/tests/sanitizers/tsan.supp:external_symbolizer_path=$symbolizer"
