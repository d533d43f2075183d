#include "taot/sim/request_dump.h"

#include <filesystem>
#include <fstream>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"
#include "taot/planner/case_json.h"

namespace taot::sim {

namespace fs = std::filesystem;

absl::Status PrepareRequestDirectory(const std::string& directory) {
  std::error_code ec;
  fs::create_directories(directory, ec);
  if (ec || !fs::is_directory(directory, ec)) {
    return absl::InvalidArgumentError(
        absl::StrCat(directory, ": cannot create the request directory",
                     ec ? absl::StrCat(": ", ec.message()) : std::string(" (a file of that name exists)")));
  }
  const fs::directory_iterator first(directory, ec);
  if (ec) return absl::InvalidArgumentError(absl::StrCat(directory, ": cannot list it: ", ec.message()));
  if (first == fs::directory_iterator()) return absl::OkStatus();
  return absl::AlreadyExistsError(absl::StrCat(first->path().string(),
                                               " already exists; requests are written only into a new or empty "
                                               "directory, so no earlier dump is mixed in or overwritten"));
}

std::string RequestFileName(const PlanPoint& point) {
  return absl::StrFormat("step_%03d_layer_%03d_mb_%02d.json", point.step, point.layer, point.microbatch);
}

RequestObserver WriteRequestsTo(std::string directory, std::string planner) {
  return [directory = std::move(directory), planner = std::move(planner)](const PlanPoint& point,
                                                                          const PlanRequest& request) {
    const nlohmann::json meta = {{"written_by", "taot-sim simulate --dump-requests"},
                                 {"planner", planner},
                                 {"step", point.step},
                                 {"layer", point.layer},
                                 {"microbatch", point.microbatch}};
    const std::string path = (fs::path(directory) / RequestFileName(point)).string();
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << CaseToJson(request, meta.dump());
    out.close();
    if (!out) return absl::InternalError(absl::StrCat(path, ": cannot write the request"));
    return absl::OkStatus();
  };
}

}  // namespace taot::sim
