#include "taot/client/gloo_transport.h"

#include <chrono>
#include <exception>
#include <filesystem>
#include <map>
#include <mutex>

#include <gloo/allgather.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

#include "absl/strings/str_cat.h"
#include "transport_parts.h"

namespace taot::client {
namespace {

std::chrono::milliseconds Millis(absl::Duration d) { return std::chrono::milliseconds(absl::ToInt64Milliseconds(d)); }

// Gloo reports failures by throwing; nothing crosses this file's functions but a status.
template <typename Body>
absl::Status Guard(std::string_view what, Body&& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat(std::string(what), ": ", e.what()));
  }
}

class GlooExchange final : public PendingExchange {
 public:
  GlooExchange(std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> sends,
               std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> recvs)
      : sends_(std::move(sends)), recvs_(std::move(recvs)) {}

  absl::Status Wait(absl::Duration timeout) override {
    const auto deadline = std::chrono::steady_clock::now() + Millis(timeout);
    return Guard("gloo exchange", [&]() -> absl::Status {
      for (auto& b : sends_) {
        if (!b->waitSend(deadline))
          return absl::DeadlineExceededError("gloo exchange: a send did not complete in time");
      }
      for (auto& b : recvs_) {
        if (!b->waitRecv(deadline))
          return absl::DeadlineExceededError("gloo exchange: a receive did not complete in time");
      }
      sends_.clear();
      recvs_.clear();
      return absl::OkStatus();
    });
  }

 private:
  std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> sends_, recvs_;
};

class GlooTransport final : public HostMemoryTransport {
 public:
  explicit GlooTransport(std::shared_ptr<gloo::rendezvous::Context> context) : context_(std::move(context)) {}

  int rank() const override { return context_->rank; }
  int size() const override { return context_->size; }

  absl::Status AllGather(std::span<const int64_t> mine, std::span<int64_t> all, absl::Duration timeout) override {
    if (all.size() != mine.size() * static_cast<size_t>(size())) {
      return absl::InvalidArgumentError(
          absl::StrCat("all: must have size x mine = ", size() * mine.size(), " entries, got ", all.size()));
    }
    return Guard("gloo all-gather", [&] {
      gloo::AllgatherOptions options(context_);
      options.setInput(const_cast<int64_t*>(mine.data()), mine.size());
      options.setOutput(all.data(), all.size());
      options.setTimeout(Millis(timeout));
      gloo::allgather(options);
      return absl::OkStatus();
    });
  }

  absl::StatusOr<std::unique_ptr<PendingExchange>> StartExchange(std::vector<SendOp> sends,
                                                                 std::vector<RecvOp> recvs) override {
    if (absl::Status s = CheckPeers(sends, recvs, rank(), size()); !s.ok()) return s;
    std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> send_buffers, recv_buffers;
    absl::Status started = Guard("gloo exchange", [&] {
      // Receives first, so a peer's early send finds its buffer.
      for (const RecvOp& op : recvs) {
        recv_buffers.push_back(context_->createUnboundBuffer(op.data, op.bytes));
        recv_buffers.back()->recv(op.peer, op.tag);
      }
      for (const SendOp& op : sends) {
        send_buffers.push_back(context_->createUnboundBuffer(const_cast<void*>(op.data), op.bytes));
        send_buffers.back()->send(op.peer, op.tag);
      }
      return absl::OkStatus();
    });
    if (!started.ok()) return started;
    return std::make_unique<GlooExchange>(std::move(send_buffers), std::move(recv_buffers));
  }

 private:
  std::shared_ptr<gloo::rendezvous::Context> context_;
};

// One TCP device (one event loop thread) per address per process: ranks that share a process
// (tests, benchmarks) then share the loop instead of waking one thread each per message.
std::shared_ptr<gloo::transport::Device> DeviceFor(const std::string& hostname) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<gloo::transport::Device>> devices;
  std::lock_guard<std::mutex> lock(mu);
  std::shared_ptr<gloo::transport::Device>& device = devices[hostname];
  if (device == nullptr) {
    gloo::transport::tcp::attr attr;
    attr.hostname = hostname;
    device = gloo::transport::tcp::CreateDevice(attr);
  }
  return device;
}

absl::Status CheckOptions(const GlooOptions& o) {
  if (o.size < 1) return absl::InvalidArgumentError(absl::StrCat("size: must be >= 1, got ", o.size));
  if (o.rank < 0 || o.rank >= o.size) {
    return absl::InvalidArgumentError(absl::StrCat("rank: must be in [0, ", o.size, "), got ", o.rank));
  }
  if (o.hostname.empty()) return absl::InvalidArgumentError("hostname: must name this rank's address");
  if (o.timeout <= absl::ZeroDuration()) return absl::InvalidArgumentError("timeout: must be positive");
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Transport>> ConnectGlooThroughStore(const GlooOptions& options,
                                                                   gloo::rendezvous::Store& store) {
  if (absl::Status s = CheckOptions(options); !s.ok()) return s;
  std::shared_ptr<gloo::rendezvous::Context> context;
  absl::Status connected = Guard("gloo rendezvous", [&] {
    context = std::make_shared<gloo::rendezvous::Context>(options.rank, options.size);
    context->setTimeout(Millis(options.timeout));
    std::shared_ptr<gloo::transport::Device> device = DeviceFor(options.hostname);
    context->connectFullMesh(store, device);
    return absl::OkStatus();
  });
  if (!connected.ok()) return connected;
  return std::make_unique<GlooTransport>(std::move(context));
}

absl::StatusOr<std::unique_ptr<Transport>> ConnectGlooThroughDirectory(const GlooOptions& options,
                                                                       const std::string& directory) {
  std::error_code error;
  if (!std::filesystem::is_directory(directory, error)) {
    return absl::InvalidArgumentError(absl::StrCat("directory: '", directory, "' is not a directory"));
  }
  gloo::rendezvous::FileStore store(directory);
  return ConnectGlooThroughStore(options, store);
}

}  // namespace taot::client
