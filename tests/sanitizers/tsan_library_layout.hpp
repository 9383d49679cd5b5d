// Force-included into every file of a ThreadSanitizer build (cmake/Sanitizers.cmake).
//
// Debian's libprotobuf is built without ThreadSanitizer, but protobuf's map_field.h gives
// MapFieldBase two extra members (seq1_, seq2_) when __SANITIZE_THREAD__ is defined. Instrumented
// code would then lay out every message with a map field differently from the library that
// destroys it: the gRPC Filter answer (a map of failed nodes) crashed in protobuf's arena cleanup,
// under TSan only. This header makes protobuf's own headers see the library's layout: they are
// read here once, with the macro hidden, and their include guards keep them so for the rest of
// the file. Everything else (libstdc++, Abseil's annotations, our own code) still sees TSan.
#pragma once
#include <cstddef>               // libstdc++'s configuration first, with TSan visible (_GLIBCXX_TSAN)
#pragma push_macro("__SANITIZE_THREAD__")
#undef __SANITIZE_THREAD__
#include <google/protobuf/map_field.h>
#pragma pop_macro("__SANITIZE_THREAD__")
