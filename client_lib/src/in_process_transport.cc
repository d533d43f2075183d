#include "taot/client/in_process_transport.h"

#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "transport_parts.h"

namespace taot::client {
namespace {

// What the ranks share: the all-gather's rows (one collective at a time, by generation) and a
// mailbox of messages per (from, to, tag), first in first out.
struct Group {
  explicit Group(int n) : size(n), rows(static_cast<size_t>(n)) {}
  const int size;
  std::mutex mu;
  std::condition_variable changed;
  // All-gather: rows deposited this generation, and ranks done reading them.
  uint64_t generation = 0;
  int deposited = 0, read = 0;
  std::vector<std::vector<int64_t>> rows;
  std::map<std::tuple<int, int, uint32_t>, std::deque<std::vector<char>>> mailbox;
};

bool WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, absl::Time deadline,
               const std::function<bool()>& ready) {
  return cv.wait_until(lock, absl::ToChronoTime(deadline), ready);
}

class InProcessExchange final : public PendingExchange {
 public:
  InProcessExchange(std::shared_ptr<Group> group, int rank, std::vector<RecvOp> recvs)
      : group_(std::move(group)), rank_(rank), recvs_(std::move(recvs)) {}
  absl::Status Wait(absl::Duration timeout) override {
    const absl::Time deadline = absl::Now() + timeout;
    std::unique_lock<std::mutex> lock(group_->mu);
    for (const RecvOp& op : recvs_) {
      auto& queue = group_->mailbox[{op.peer, rank_, op.tag}];
      if (!WaitUntil(lock, group_->changed, deadline, [&] { return !queue.empty(); })) {
        return absl::DeadlineExceededError(
            absl::StrCat("in-process exchange: rank ", op.peer, " sent nothing in time"));
      }
      if (queue.front().size() != op.bytes) {
        return absl::InvalidArgumentError(absl::StrCat("in-process exchange: rank ", op.peer, " sent ",
                                                       queue.front().size(), " bytes, ", op.bytes, " expected"));
      }
      std::memcpy(op.data, queue.front().data(), op.bytes);
      queue.pop_front();
    }
    recvs_.clear();
    return absl::OkStatus();
  }

 private:
  std::shared_ptr<Group> group_;
  const int rank_;
  std::vector<RecvOp> recvs_;
};

class InProcessTransport final : public HostMemoryTransport {
 public:
  InProcessTransport(std::shared_ptr<Group> group, int rank) : group_(std::move(group)), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return group_->size; }

  absl::Status AllGather(std::span<const int64_t> mine, std::span<int64_t> all, absl::Duration timeout) override {
    if (all.size() != mine.size() * static_cast<size_t>(size())) {
      return absl::InvalidArgumentError(
          absl::StrCat("all: must have size x mine = ", size() * mine.size(), " entries, got ", all.size()));
    }
    const absl::Time deadline = absl::Now() + timeout;
    Group& g = *group_;
    std::unique_lock<std::mutex> lock(g.mu);
    // The previous collective's readers must all be done before rows are overwritten.
    if (!WaitUntil(lock, g.changed, deadline, [&] { return g.read == 0; })) {
      return absl::DeadlineExceededError("in-process all-gather: the previous one did not finish in time");
    }
    const uint64_t generation = g.generation;
    g.rows[rank_].assign(mine.begin(), mine.end());
    if (++g.deposited == g.size) g.changed.notify_all();
    if (!WaitUntil(lock, g.changed, deadline, [&] { return g.generation != generation || g.deposited == g.size; })) {
      return absl::DeadlineExceededError("in-process all-gather: not every rank arrived in time");
    }
    for (int r = 0; r < g.size; ++r) {
      if (g.rows[r].size() != mine.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("mine: rank ", r, " gathers ", g.rows[r].size(), " entries, this rank ", mine.size()));
      }
      std::copy(g.rows[r].begin(), g.rows[r].end(), all.begin() + static_cast<std::ptrdiff_t>(r * mine.size()));
    }
    // The last reader opens the next collective.
    if (++g.read == g.size) {
      g.read = 0;
      g.deposited = 0;
      ++g.generation;
      g.changed.notify_all();
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::unique_ptr<PendingExchange>> StartExchange(std::vector<SendOp> sends,
                                                                 std::vector<RecvOp> recvs) override {
    if (absl::Status s = CheckPeers(sends, recvs, rank_, size()); !s.ok()) return s;
    {
      std::lock_guard<std::mutex> lock(group_->mu);
      for (const SendOp& op : sends) {
        const char* data = static_cast<const char*>(op.data);
        group_->mailbox[{rank_, op.peer, op.tag}].emplace_back(data, data + op.bytes);
      }
    }
    group_->changed.notify_all();
    return std::make_unique<InProcessExchange>(group_, rank_, std::move(recvs));
  }

 private:
  std::shared_ptr<Group> group_;
  const int rank_;
};

}  // namespace

std::vector<std::unique_ptr<Transport>> ConnectInProcess(int size) {
  auto group = std::make_shared<Group>(size);
  std::vector<std::unique_ptr<Transport>> out;
  for (int r = 0; r < size; ++r) out.push_back(std::make_unique<InProcessTransport>(group, r));
  return out;
}

}  // namespace taot::client
