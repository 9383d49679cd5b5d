// What kind of build the tests run in, for the few tests whose cost depends on it.
#pragma once

namespace fracpack::test {

/// True in the sanitizer jobs' builds (FRACPACK_SANITIZE; tests/CMakeLists.txt defines
/// FRACPACK_SANITIZED). Those builds keep assertions on, so SchedulingState checks its whole state
/// after every session and consolidation (DebugCheck): a replay of the real trace, tens of
/// thousands of sessions over thousands of pods, takes the better part of an hour there.
#ifdef FRACPACK_SANITIZED
inline constexpr bool kSanitizedBuild = true;
#else
inline constexpr bool kSanitizedBuild = false;
#endif

}  // namespace fracpack::test
