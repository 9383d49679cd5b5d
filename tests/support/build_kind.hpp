// What kind of build the tests run in, for the few tests whose cost depends on it.
#pragma once

namespace fracpack::test {

/// True where assertions are on (no NDEBUG: Debug builds and the sanitizer jobs' builds). There
/// SchedulingState checks its whole state after every session and consolidation (DebugCheck): a
/// replay of the real trace, tens of thousands of sessions over thousands of pods, takes the
/// better part of an hour.
#ifdef NDEBUG
inline constexpr bool kStateSelfChecks = false;
#else
inline constexpr bool kStateSelfChecks = true;
#endif

}  // namespace fracpack::test
