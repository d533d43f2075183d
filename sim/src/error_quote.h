// How errors quote the files they refuse: outside files may hold megabytes on one line, and a
// message should name the bad value without repeating all of it.
#pragma once

#include <string>
#include <string_view>

namespace taot::sim {

// At most 40 bytes of `text`, marked "..." when cut.
std::string QuoteForError(std::string_view text);

}  // namespace taot::sim
