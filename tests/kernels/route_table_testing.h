// Route tables for the kernel tests, built from (expert, guest, pairs) triples the way the client
// builds them from a plan: guests of an expert in ascending rank, slots of a guest in ascending
// expert order.
#pragma once

#include <algorithm>
#include <map>
#include <tuple>
#include <vector>

#include "taot/kernels/route_table.h"

namespace taot::kernels::testing {

struct Share {
  int32_t expert, guest;
  int64_t pairs;
};

class OwnedTable {
 public:
  OwnedTable(int32_t ranks, int32_t experts, int32_t slots, std::vector<Share> shares) {
    view_.ranks = ranks;
    view_.experts = experts;
    view_.slots = slots;
    std::sort(shares.begin(), shares.end(),
              [](const Share& a, const Share& b) { return std::tie(a.expert, a.guest) < std::tie(b.expert, b.guest); });
    std::map<int32_t, std::vector<int32_t>> on_guest;  // guest -> experts, ascending
    for (const Share& s : shares) on_guest[s.guest].push_back(s.expert);
    for (auto& [guest, list] : on_guest) std::sort(list.begin(), list.end());
    begin_.assign(static_cast<size_t>(experts) + 1, 0);
    for (const Share& s : shares) ++begin_[s.expert + 1];
    for (int32_t e = 0; e < experts; ++e) begin_[e + 1] += begin_[e];
    int64_t run = 0;
    int32_t last = -1;
    for (const Share& s : shares) {
      if (s.expert != last) run = 0;
      last = s.expert;
      run += s.pairs;
      rank_.push_back(s.guest);
      end_.push_back(run);
      const std::vector<int32_t>& list = on_guest[s.guest];
      const int32_t slot = static_cast<int32_t>(std::find(list.begin(), list.end(), s.expert) - list.begin());
      virtual_.push_back(s.guest * LocalExperts(view_) + experts / ranks + slot);
    }
    view_.guest_begin = begin_.data();
    view_.guest_rank = rank_.data();
    view_.pair_end = end_.data();
    view_.virtual_id = virtual_.data();
  }
  OwnedTable(const OwnedTable&) = delete;
  OwnedTable& operator=(const OwnedTable&) = delete;

  const RouteTable& view() const { return view_; }
  const std::vector<int32_t>& begin() const { return begin_; }
  const std::vector<int32_t>& rank() const { return rank_; }
  const std::vector<int64_t>& end() const { return end_; }
  const std::vector<int32_t>& virtual_ids() const { return virtual_; }

 private:
  RouteTable view_;
  std::vector<int32_t> begin_, rank_;
  std::vector<int64_t> end_;
  std::vector<int32_t> virtual_;
};

}  // namespace taot::kernels::testing
