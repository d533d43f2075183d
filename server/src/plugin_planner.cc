#include "taot/server/plugin_planner.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstring>
#include <memory>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "taot/planner/run_planner.h"
#include "taot/planner_plugin.h"
#include "taot/server/log.h"

namespace taot::server {
namespace {

constexpr int32_t kErrorSize = 512;

void PluginLog(taot_log_level_t level, const char* message) {
  const LogLevel ours = level == TAOT_LOG_DEBUG     ? LogLevel::kDebug
                        : level == TAOT_LOG_WARNING ? LogLevel::kWarning
                        : level == TAOT_LOG_ERROR   ? LogLevel::kError
                                                    : LogLevel::kInfo;
  Log(ours, message != nullptr ? message : "", {{"source", "plugin"}});
}

// The library stays loaded while any planner made from it lives.
using Library = std::shared_ptr<void>;

class PluginPlanner final : public Planner {
 public:
  PluginPlanner(Library library, const taot_planner_plugin_v1* api, void* context)
      : library_(std::move(library)), api_(api), context_(context) {}
  ~PluginPlanner() override { api_->destroy(context_); }

  std::string_view name() const override { return api_->name; }
  // The plugin ABI promises nothing about two contexts planning at once (a plugin may keep state
  // in its library): a batch stays on one instance.
  Batching batching() const override { return Batching::kOneThread; }

  absl::StatusOr<Plan> MakePlan(const PlanRequest& request) override {
    const int R = request.ranks();
    std::vector<double> cost(static_cast<size_t>(R) * R);
    for (int a = 0; a < R; ++a) {
      for (int b = 0; b < R; ++b) cost[static_cast<size_t>(a) * R + b] = request.topology().cost(a, b);
    }
    std::vector<int32_t> resident;
    for (const Replica& r : request.resident) resident.insert(resident.end(), {r.expert, r.rank});
    const std::vector<int>& nodes = request.topology().node_of_rank();
    const std::vector<int32_t> node_of_rank(nodes.begin(), nodes.end());
    const taot_plan_request_v1 q{R,
                                 request.experts(),
                                 request.slots_per_rank(),
                                 request.expert_bytes(),
                                 node_of_rank.data(),
                                 cost.data(),
                                 request.load.data().data(),
                                 resident.data(),
                                 static_cast<int32_t>(request.resident.size()),
                                 request.target_imbalance_pct.value_or(-1.0)};
    const int32_t replica_capacity = R * request.slots_per_rank();
    replicas_.resize(static_cast<size_t>(replica_capacity));
    assignments_.resize(static_cast<size_t>(R) * replica_capacity);
    taot_plan_v1 out{
        replicas_.data(), replica_capacity, 0, assignments_.data(), static_cast<int32_t>(assignments_.size()), 0};
    char error[kErrorSize] = "";
    if (api_->make_plan(context_, &q, &out, error, kErrorSize) != TAOT_PLUGIN_OK) {
      return absl::InternalError(absl::StrCat("plugin ", api_->name, ": make_plan failed: ", error));
    }
    if (out.replica_count < 0 || out.replica_count > replica_capacity || out.assignment_count < 0 ||
        out.assignment_count > out.assignment_capacity) {
      return absl::InternalError(absl::StrCat("plugin ", api_->name, ": counts outside the buffers (",
                                              out.replica_count, " replicas, ", out.assignment_count, " assignments)"));
    }
    Plan plan;
    for (int32_t i = 0; i < out.replica_count; ++i) plan.replicas.push_back({replicas_[i].expert, replicas_[i].rank});
    for (int32_t i = 0; i < out.assignment_count; ++i) {
      const taot_assignment_v1& a = assignments_[i];
      plan.assignments.push_back({a.source, a.expert, a.rank, a.tokens});
    }
    return plan;
  }

 private:
  Library library_;
  const taot_planner_plugin_v1* api_;
  void* context_;
  std::vector<taot_replica_v1> replicas_;
  std::vector<taot_assignment_v1> assignments_;
};

absl::StatusOr<std::unique_ptr<Planner>> Create(const Library& library, const taot_planner_plugin_v1* api,
                                                const PlannerParams& params) {
  std::vector<const char*> keys, values;
  for (const auto& [k, v] : params) {
    keys.push_back(k.c_str());
    values.push_back(v.c_str());
  }
  void* context = nullptr;
  char error[kErrorSize] = "";
  if (api->init(&context, keys.data(), values.data(), static_cast<int32_t>(keys.size()), PluginLog, error,
                kErrorSize) != TAOT_PLUGIN_OK) {
    return absl::InvalidArgumentError(absl::StrCat("planner ", api->name, ": ", error));
  }
  return std::make_unique<PluginPlanner>(library, api, context);
}

bool ValidName(const char* name) {
  if (name == nullptr || *name == '\0') return false;
  for (const char* c = name; *c != '\0'; ++c) {
    if (!(std::isalnum(static_cast<unsigned char>(*c)) || *c == '-' || *c == '_')) return false;
  }
  return true;
}

// A small skewed request on two nodes: a plugin's plan for it must be valid.
PlanRequest Probe() {
  PlanRequest r = EmptyRequest(std::make_shared<const Problem>(Problem{*Topology::Uniform(4, 2), 8, 2, 0}));
  for (int s = 0; s < 4; ++s) {
    for (int e = 0; e < 8; ++e) r.load.at(s, e) = e == 0 ? 400 : 10 + s + e;
  }
  return r;
}

// `size` bytes of the file at `offset`, which must lie inside its `file_size` bytes.
absl::StatusOr<std::string> ReadAt(int fd, uint64_t file_size, uint64_t offset, uint64_t size, const char* what) {
  if (offset > file_size || size > file_size - offset) {
    return absl::InvalidArgumentError(absl::StrCat("not a valid ELF file: its ", what, " lies beyond its end"));
  }
  std::string bytes(size, '\0');
  for (uint64_t done = 0; done < size;) {
    const ssize_t n = pread(fd, bytes.data() + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return absl::InvalidArgumentError(absl::StrCat("cannot read its ", what));
    done += static_cast<uint64_t>(n);
  }
  return bytes;
}

template <typename T>
T At(const std::string& bytes, size_t index) {
  T value;
  std::memcpy(&value, bytes.data() + index * sizeof(T), sizeof(T));
  return value;
}

// Whether the shared library at `path` exports the plugin's entry symbol, read from its dynamic
// symbol table without loading it. dlopen runs a library's initialisers inside the daemon, and
// a library that is not a plugin can kill it there: libtaot_client.so registers the same
// generated protobuf descriptors as the daemon, and protobuf aborts on the second registration.
// Its symbol table alone tells that it is no plugin, before any of its code runs.
absl::Status CheckExportsEntry(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::InvalidArgumentError(absl::StrCat("cannot load: ", std::strerror(errno)));
  absl::Cleanup close_fd = [fd] { close(fd); };
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return absl::InvalidArgumentError("cannot load: not a regular file");
  const auto file_size = static_cast<uint64_t>(st.st_size);
  absl::StatusOr<std::string> header = ReadAt(fd, file_size, 0, sizeof(Elf64_Ehdr), "ELF header");
  if (!header.ok() || std::memcmp(header->data(), ELFMAG, SELFMAG) != 0) {
    return absl::InvalidArgumentError("not an ELF shared library");
  }
  const auto eh = At<Elf64_Ehdr>(*header, 0);
  constexpr unsigned char kNativeData = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB;
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != kNativeData) {
    return absl::InvalidArgumentError("not a 64-bit ELF file of this machine's byte order");
  }
  if (eh.e_type != ET_DYN) return absl::InvalidArgumentError("not a shared library (an ELF file of another type)");
  if (eh.e_shnum == 0 || eh.e_shentsize != sizeof(Elf64_Shdr)) {
    return absl::InvalidArgumentError("has no section headers to find its exported symbols in");
  }
  absl::StatusOr<std::string> sections =
      ReadAt(fd, file_size, eh.e_shoff, uint64_t{eh.e_shnum} * sizeof(Elf64_Shdr), "section headers");
  if (!sections.ok()) return sections.status();
  for (size_t i = 0; i < eh.e_shnum; ++i) {
    const auto dynsym = At<Elf64_Shdr>(*sections, i);
    if (dynsym.sh_type != SHT_DYNSYM) continue;
    if (dynsym.sh_entsize != sizeof(Elf64_Sym) || dynsym.sh_link >= eh.e_shnum) {
      return absl::InvalidArgumentError("not a valid ELF file: a malformed dynamic symbol table");
    }
    const auto strtab = At<Elf64_Shdr>(*sections, dynsym.sh_link);
    absl::StatusOr<std::string> symbols = ReadAt(fd, file_size, dynsym.sh_offset, dynsym.sh_size, "dynamic symbols");
    if (!symbols.ok()) return symbols.status();
    absl::StatusOr<std::string> names = ReadAt(fd, file_size, strtab.sh_offset, strtab.sh_size, "symbol names");
    if (!names.ok()) return names.status();
    const std::string entry = TAOT_PLANNER_PLUGIN_V1_SYMBOL;
    for (size_t k = 0; k < symbols->size() / sizeof(Elf64_Sym); ++k) {
      const auto sym = At<Elf64_Sym>(*symbols, k);
      // The name, NUL included, must lie in the table; then a shorter one cannot match.
      if (sym.st_name > names->size() || names->size() - sym.st_name <= entry.size() ||
          names->compare(sym.st_name, entry.size() + 1, entry.c_str(), entry.size() + 1) != 0) {
        continue;
      }
      const unsigned bind = ELF64_ST_BIND(sym.st_info);
      if (sym.st_shndx == SHN_UNDEF || (bind != STB_GLOBAL && bind != STB_WEAK)) continue;
      if (ELF64_ST_TYPE(sym.st_info) != STT_OBJECT || sym.st_size < sizeof(taot_planner_plugin_v1)) {
        return absl::InvalidArgumentError(
            absl::StrCat("exports ", entry, " but not as a taot_planner_plugin_v1 struct"));
      }
      return absl::OkStatus();
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat("does not export ", TAOT_PLANNER_PLUGIN_V1_SYMBOL, " (not a taot planner plugin, version 1)"));
}

// Loads the library once in a child process first: a library whose own initialisers crash,
// exit or hang would otherwise take the daemon with it. The child is forked before the daemon
// starts any thread (plugins load first), so it may call dlopen; it runs only the library's
// initialisers and _exit, never the daemon's atexit handlers. The cost is loading twice, once
// at start.
absl::Status ProbeLoad(const std::string& path, absl::Duration timeout) {
  const pid_t child = fork();
  if (child < 0) return absl::InternalError(absl::StrCat("cannot start a probe process: ", std::strerror(errno)));
  if (child == 0) {
    const rlimit no_core{0, 0};
    setrlimit(RLIMIT_CORE, &no_core);             // a crash here is reported; it leaves no core file
    dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);  // a load error shows again in the daemon's dlopen
    _exit(0);
  }
  const absl::Time deadline = absl::Now() + timeout;
  int status = 0;
  while (true) {
    const pid_t done = waitpid(child, &status, WNOHANG);
    if (done == child) break;
    if (done < 0 && errno != EINTR) {
      kill(child, SIGKILL);
      return absl::InternalError(absl::StrCat("cannot wait for its probe process: ", std::strerror(errno)));
    }
    if (absl::Now() >= deadline) {
      kill(child, SIGKILL);
      waitpid(child, &status, 0);
      return absl::InvalidArgumentError(absl::StrCat("loading it in a probe process did not finish within ",
                                                     absl::FormatDuration(timeout), " (its initialisers hang)"));
    }
    absl::SleepFor(absl::Milliseconds(5));
  }
  if (WIFSIGNALED(status)) {
    const char* name = sigabbrev_np(WTERMSIG(status));
    return absl::InvalidArgumentError(absl::StrCat("loading it killed a probe process with signal ", WTERMSIG(status),
                                                   " (SIG", name != nullptr ? name : "?", "): its initialisers crash"));
  }
  if (WEXITSTATUS(status) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("loading it made a probe process exit with status ",
                                                   WEXITSTATUS(status), ": its initialisers exit"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> RegisterPlugin(const std::string& path, PlannerRegistry& registry,
                                           absl::Duration load_timeout) {
  // dlopen looks a bare name up in the system's library directories: loading "whatever is found
  // there" into the daemon is not what an operator means.
  if (path.find('/') == std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("plugin ", path, ": give the library's path (./", path, " for one in the current directory)"));
  }
  absl::Status checked = CheckExportsEntry(path);
  if (checked.ok()) checked = ProbeLoad(path, load_timeout);
  if (!checked.ok()) return absl::Status(checked.code(), absl::StrCat("plugin ", path, ": ", checked.message()));
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return absl::InvalidArgumentError(absl::StrCat("plugin ", path, ": cannot load: ", dlerror()));
  Library library(handle, [](void* h) { dlclose(h); });
  const auto* api = static_cast<const taot_planner_plugin_v1*>(dlsym(handle, TAOT_PLANNER_PLUGIN_V1_SYMBOL));
  if (api == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("plugin ", path, ": no symbol ", TAOT_PLANNER_PLUGIN_V1_SYMBOL,
                                                   " (not a taot planner plugin, version 1)"));
  }
  if (!ValidName(api->name) || api->init == nullptr || api->make_plan == nullptr || api->destroy == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("plugin ", path, ": ", TAOT_PLANNER_PLUGIN_V1_SYMBOL,
                     " needs a name (letters, digits, '-', '_') and all three functions"));
  }
  absl::StatusOr<std::unique_ptr<Planner>> probe_planner = Create(library, api, {});
  if (!probe_planner.ok())
    return absl::InvalidArgumentError(absl::StrCat("plugin ", path, ": ", probe_planner.status().message()));
  if (absl::StatusOr<ScoredPlan> probe = RunPlanner(**probe_planner, Probe()); !probe.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("plugin ", path, ": its plan for a probe request is refused: ", probe.status().message()));
  }
  const std::string name = api->name;
  absl::Status registered =
      registry.Register({name, absl::StrCat("plugin ", path), {"parameters: as the plugin documents them"}},
                        [library, api](const PlannerParams& params) { return Create(library, api, params); });
  if (!registered.ok()) return absl::InvalidArgumentError(absl::StrCat("plugin ", path, ": ", registered.message()));
  return name;
}

}  // namespace taot::server
