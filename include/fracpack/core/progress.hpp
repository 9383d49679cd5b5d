// A one-line progress bar on stderr for long commands (replay, bench density); nothing when
// stderr is not a terminal.
#pragma once

#include <cstddef>

namespace fracpack {

/// Redraws "[=====     ] done/total" in place; ends the line when done == total.
void draw_progress(std::size_t done, std::size_t total);

}  // namespace fracpack
