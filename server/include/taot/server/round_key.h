// A round of the remote planning mode: one (step, layer) of a run, planned once for every rank.
#pragma once

#include <compare>
#include <cstdint>
#include <string>

namespace taot::server {

struct RoundKey {
  int64_t step = 0;
  int32_t layer = 0;
  auto operator<=>(const RoundKey&) const = default;
};

// "(step 3, layer 1)", as error messages name a round.
std::string KeyText(RoundKey key);

}  // namespace taot::server
