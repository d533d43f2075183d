#include "taot/server/round_key.h"

#include "absl/strings/str_cat.h"

namespace taot::server {

std::string KeyText(RoundKey key) { return absl::StrCat("(step ", key.step, ", layer ", key.layer, ")"); }

}  // namespace taot::server
