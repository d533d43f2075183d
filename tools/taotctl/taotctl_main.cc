// taotctl: talk to a running taot-planner (taot.v1.Admin): its status, swapping its planner,
// planning a CASE through it.
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <CLI/CLI.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "taot/tools/cli_support.h"
#include "taot/tools/parse_or_exit.h"
#include "taot/v1/planner.grpc.pb.h"
#include "taot/wire/credentials.h"

namespace taot::ctl {
namespace {

struct Common {
  std::string address = "127.0.0.1:50051";
  int timeout_s = 10;
  std::string token;  // default: $TAOT_JOB_TOKEN
  std::string tls_ca, tls_cert, tls_key;
};

// What a failed command prints and returns.
int Fail(const std::string& what) {
  std::cerr << "taotctl: error: " << what << "\n";
  return 1;
}

int FailRpc(const grpc::Status& s, const Common& c) {
  if (s.error_code() == grpc::StatusCode::UNAVAILABLE) {
    return Fail(absl::StrCat("no taot-planner at ", c.address, " (", s.error_message(), ")"));
  }
  return Fail(s.error_message());
}

// Plain, TLS (--tls-ca: the server's CA) or mutual TLS (plus --tls-cert and --tls-key); without
// --tls-ca the client's certificate is not used.
std::unique_ptr<taot::v1::Admin::Stub> Connect(const Common& c) {
  wire::ClientTls tls;
  if (!c.tls_ca.empty()) tls = {{"--tls-ca", c.tls_ca}, {"--tls-cert", c.tls_cert}, {"--tls-key", c.tls_key}};
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials = wire::ChannelCredentials(tls);
  if (!credentials.ok()) throw std::runtime_error(std::string(credentials.status().message()));
  return taot::v1::Admin::NewStub(grpc::CreateChannel(c.address, *credentials));
}

void SetDeadline(grpc::ClientContext& context, const Common& c) {
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(c.timeout_s));
  if (!c.token.empty()) context.AddMetadata("authorization", "Bearer " + c.token);
}

void PrintPlanLine(const taot::v1::Plan& p) {
  std::cout << absl::StrFormat(
      "  step %-6d layer %-4d %-10s v%-3d imbalance %6.1f%% -> %5.1f%%  transfers %d intra %d inter%s\n", p.step(),
      p.layer(), p.planner(), p.version(), p.stats().imbalance_before_pct(), p.stats().imbalance_after_pct(),
      p.stats().intra_node_transfers(), p.stats().inter_node_transfers(),
      p.fallback() ? absl::StrCat("  FALLBACK: ", p.fallback_reason()) : "");
}

int Status(const Common& c) {
  taot::v1::StatusResponse s;
  grpc::ClientContext context;
  SetDeadline(context, c);
  if (grpc::Status st = Connect(c)->GetStatus(&context, taot::v1::StatusRequest(), &s); !st.ok()) return FailRpc(st, c);
  std::cout << "job " << s.job_id() << ": " << s.registered() << " of " << s.world_size() << " ranks registered, "
            << (s.nodes() > 0 ? absl::StrCat(s.nodes(), " nodes") : "topology not known yet") << "\n";
  std::cout << "planner " << s.planner() << " (version " << s.planner_version() << ")";
  for (const auto& [k, v] : s.planner_params()) std::cout << " " << k << "=" << v;
  std::cout << "\n";
  if (s.recent_plans_size() == 0) std::cout << "no plans yet\n";
  for (const taot::v1::Plan& p : s.recent_plans()) PrintPlanLine(p);
  return 0;
}

// Polls the status and prints every plan not printed before, oldest first: live per-layer
// imbalance and traffic. `polls` 0: until interrupted.
int Watch(const Common& c, int interval_ms, int polls) {
  auto stub = Connect(c);
  std::set<std::tuple<int64_t, int32_t, uint64_t>> seen;
  std::string planner;
  for (int poll = 0; polls == 0 || poll < polls; ++poll) {
    if (poll > 0) std::this_thread::sleep_for(std::chrono::milliseconds(interval_ms));
    taot::v1::StatusResponse s;
    grpc::ClientContext context;
    SetDeadline(context, c);
    if (grpc::Status st = stub->GetStatus(&context, taot::v1::StatusRequest(), &s); !st.ok()) return FailRpc(st, c);
    const std::string now =
        absl::StrCat(s.planner(), " v", s.planner_version(), ", ", s.registered(), "/", s.world_size(), " ranks");
    if (now != planner) {
      std::cout << "job " << s.job_id() << ": planner " << now << "\n";
      planner = now;
    }
    for (int i = s.recent_plans_size() - 1; i >= 0; --i) {
      const taot::v1::Plan& p = s.recent_plans(i);
      if (seen.insert({p.step(), p.layer(), p.hash()}).second) PrintPlanLine(p);
    }
    std::cout.flush();
  }
  return 0;
}

int SetPlanner(const Common& c, const std::string& name, const std::vector<std::string>& params) {
  taot::v1::SetPlannerRequest request;
  request.set_planner(name);
  for (const std::string& item : params) {
    std::vector<std::string> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
    if (kv.size() != 2 || kv[0].empty()) return Fail(absl::StrCat("--param: must be key=value, got '", item, "'"));
    (*request.mutable_params())[kv[0]] = kv[1];
  }
  taot::v1::SetPlannerResponse response;
  grpc::ClientContext context;
  SetDeadline(context, c);
  if (grpc::Status st = Connect(c)->SetPlanner(&context, request, &response); !st.ok()) return FailRpc(st, c);
  std::cout << "planner " << name << " (version " << response.planner_version() << ") plans the next round\n";
  return 0;
}

int Plan(const Common& c, const std::string& path, const std::string& planner) {
  std::ifstream file(path);
  if (!file) return Fail(absl::StrCat(path, ": cannot open the CASE file"));
  std::stringstream text;
  text << file.rdbuf();
  taot::v1::PlanCaseRequest request;
  request.set_case_json(text.str());
  request.set_planner(planner);
  taot::v1::Plan plan;
  grpc::ClientContext context;
  SetDeadline(context, c);
  if (grpc::Status st = Connect(c)->PlanCase(&context, request, &plan); !st.ok()) return FailRpc(st, c);
  std::cout << absl::StrFormat("%s: %d replicas, %d assignments, hash %016x\n", plan.planner(), plan.replicas_size(),
                               plan.assignments_size(), plan.hash());
  PrintPlanLine(plan);
  for (const taot::v1::Replica& r : plan.replicas())
    std::cout << "  replica expert " << r.expert() << " on rank " << r.rank() << "\n";
  return 0;
}

int Main(int argc, char** argv) {
  CLI::App app{"taotctl: inspect and steer a running taot-planner"};
  app.require_subcommand(1);
  app.fallthrough();  // --address and friends may come after the subcommand too
  Common c;
  app.add_option("--address", c.address, "The daemon's address")->capture_default_str();
  app.add_option("--timeout-s", c.timeout_s, "Deadline of each call")->capture_default_str();
  if (const char* env = std::getenv("TAOT_JOB_TOKEN"); env != nullptr) c.token = env;
  app.add_option("--token", c.token, "The job token (default: $TAOT_JOB_TOKEN)");
  app.add_option("--tls-ca", c.tls_ca, "CA (PEM) of the daemon's certificate: use TLS");
  app.add_option("--tls-cert", c.tls_cert, "Client certificate (PEM), for mutual TLS");
  app.add_option("--tls-key", c.tls_key, "Client private key (PEM), for mutual TLS");
  int rc = 0;
  app.add_subcommand("status", "Ranks, planner and the latest plans")->callback([&] { rc = Status(c); });
  std::string planner;
  std::vector<std::string> params;
  CLI::App* set = app.add_subcommand("set-planner", "Swap the planner (the next round uses it)");
  set->add_option("name", planner, "Planner name")->required();
  set->add_option("--param", params, "Planner parameter key=value (repeatable)");
  set->callback([&] { rc = SetPlanner(c, planner, params); });
  int interval_ms = 500, polls = 0;
  CLI::App* watch = app.add_subcommand("watch", "Print each new plan's imbalance and traffic as it happens");
  watch->add_option("--interval-ms", interval_ms, "Time between polls")->capture_default_str();
  watch->add_option("--polls", polls, "Stop after this many polls (0: never)")->capture_default_str();
  watch->callback([&] { rc = Watch(c, interval_ms, polls); });
  std::string case_path, case_planner;
  CLI::App* plan = app.add_subcommand("plan", "Plan a CASE file of the job's shape through the daemon (a dry run)");
  plan->add_option("case", case_path, "CASE file (docs/formats.md)")->required();
  plan->add_option("--planner", case_planner, "Planner to use (default: the daemon's)");
  plan->callback([&] { rc = Plan(c, case_path, case_planner); });
  if (const std::optional<int> code = cli::ParseOrExit(app, argc, argv, "taotctl")) return *code;
  return rc;
}

}  // namespace
}  // namespace taot::ctl

// A file that cannot be read (Connect) is one error line and exit code 1.
int main(int argc, char** argv) {
  return taot::cli::ExitOnException("taotctl", [&] { return taot::ctl::Main(argc, argv); });
}
