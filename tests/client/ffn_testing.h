// The small MoE layer of 2-layer FFN experts the end-to-end tests train (ffn_e2e_test.cc on the
// host transports, ffn_device_e2e_test.cc on the device plane): the experts' forward and backward
// passes, a batch, and one pass of the layer over a transport for the layer's own token exchange
// (the trainer's dispatcher, not taot's). The oracle is the same layer without replication.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "taot/client/transport.h"

namespace taot::client::ffn {

inline constexpr int kRanks = 4, kExperts = 8, kSlots = 2, kTokens = 48, kDim = 4, kHidden = 8, kSteps = 3;
inline constexpr int kParams = kDim * kHidden + kHidden * kDim;
inline constexpr float kRate = 0.05f;

using Weights = std::vector<float>;  // W1 (kDim x kHidden), then W2 (kHidden x kDim)

// y = relu(x W1) W2 for one row, and the backward pass for dL/dy = g: adds to the expert's
// gradient and returns dL/dx.
inline std::vector<float> Forward(const Weights& w, const float* x) {
  std::vector<float> y(kDim, 0);
  for (int i = 0; i < kHidden; ++i) {
    float a = 0;
    for (int k = 0; k < kDim; ++k) a += x[k] * w[k * kHidden + i];
    if (a <= 0) continue;
    for (int j = 0; j < kDim; ++j) y[j] += a * w[kDim * kHidden + i * kDim + j];
  }
  return y;
}
inline std::vector<float> Backward(const Weights& w, const float* x, const float* g, float* grad) {
  std::vector<float> dx(kDim, 0);
  for (int i = 0; i < kHidden; ++i) {
    float a = 0;
    for (int k = 0; k < kDim; ++k) a += x[k] * w[k * kHidden + i];
    if (a <= 0) continue;
    float dh = 0;
    for (int j = 0; j < kDim; ++j) {
      grad[kDim * kHidden + i * kDim + j] += a * g[j];
      dh += w[kDim * kHidden + i * kDim + j] * g[j];
    }
    for (int k = 0; k < kDim; ++k) {
      grad[k * kHidden + i] += x[k] * dh;
      dx[k] += w[k * kHidden + i] * dh;
    }
  }
  return dx;
}

// One rank's view of a layer pass: its tokens, their experts and their loss gradients.
struct Batch {
  std::vector<float> x, target;  // kTokens x kDim each
  std::vector<int32_t> experts;  // top-1
};

// Sends each token (its x and its dL/dy = target) to dest[t]; the receiver computes the FFN of
// the token's expert (weights_of), adds to that expert's gradient (grad_of), and sends y and dL/dx
// back. Returns y and dx per token, in token order.
struct Result {
  std::vector<float> y, dx;
};
inline Result RunLayer(Transport& t, const Batch& b, const std::vector<int32_t>& dest,
                       const std::function<const Weights&(int)>& weights_of,
                       const std::function<float*(int)>& grad_of) {
  const int R = t.size();
  // Rows out: per destination, in token order: [expert, x..., target...].
  constexpr int kRow = 1 + 2 * kDim;
  std::vector<std::vector<float>> out(R);
  std::vector<std::vector<int>> tokens_to(R);
  for (int i = 0; i < kTokens; ++i) {
    std::vector<float>& o = out[dest[i]];
    o.push_back(static_cast<float>(b.experts[i]));
    o.insert(o.end(), b.x.begin() + i * kDim, b.x.begin() + (i + 1) * kDim);
    o.insert(o.end(), b.target.begin() + i * kDim, b.target.begin() + (i + 1) * kDim);
    tokens_to[dest[i]].push_back(i);
  }
  std::vector<int64_t> sends(R), counts(static_cast<size_t>(R) * R);
  for (int r = 0; r < R; ++r) sends[r] = static_cast<int64_t>(tokens_to[r].size());
  EXPECT_TRUE(t.AllGather(sends, counts, absl::Seconds(30)).ok());
  std::vector<std::vector<float>> in(R);
  // Sends to[p] to each rank p; receives rows_from(p) rows of row_from floats from each.
  auto exchange = [&](std::vector<std::vector<float>>& to, std::vector<std::vector<float>>& from, int row_from,
                      const std::function<int64_t(int)>& rows_from, uint32_t tag) {
    std::vector<SendOp> s;
    std::vector<RecvOp> r;
    for (int p = 0; p < R; ++p) {
      from[p].resize(static_cast<size_t>(rows_from(p) * row_from));
      if (p == t.rank()) {
        from[p] = to[p];
        continue;
      }
      if (!to[p].empty()) s.push_back({p, to[p].data(), to[p].size() * sizeof(float), tag});
      if (!from[p].empty()) r.push_back({p, from[p].data(), from[p].size() * sizeof(float), tag});
    }
    auto pending = t.StartExchange(std::move(s), std::move(r));
    ASSERT_TRUE(pending.ok());
    ASSERT_TRUE((*pending)->Wait(absl::Seconds(30)).ok());
  };
  exchange(
      out, in, kRow, [&](int p) { return counts[static_cast<size_t>(p) * R + t.rank()]; }, 1);
  // Compute what arrived; answer with [y..., dx...] per row.
  std::vector<std::vector<float>> answers(R), back(R);
  for (int p = 0; p < R; ++p) {
    for (size_t row = 0; row * kRow < in[p].size(); ++row) {
      const float* r = in[p].data() + row * kRow;
      const int e = static_cast<int>(r[0]);
      const std::vector<float> y = Forward(weights_of(e), r + 1);
      const std::vector<float> dx = Backward(weights_of(e), r + 1, r + 1 + kDim, grad_of(e));
      answers[p].insert(answers[p].end(), y.begin(), y.end());
      answers[p].insert(answers[p].end(), dx.begin(), dx.end());
    }
  }
  exchange(
      answers, back, 2 * kDim, [&](int p) { return sends[p]; }, 2);
  Result res{std::vector<float>(kTokens * kDim), std::vector<float>(kTokens * kDim)};
  for (int p = 0; p < R; ++p) {
    for (size_t j = 0; j < tokens_to[p].size(); ++j) {
      const int i = tokens_to[p][j];
      std::copy_n(back[p].begin() + j * 2 * kDim, kDim, res.y.begin() + i * kDim);
      std::copy_n(back[p].begin() + j * 2 * kDim + kDim, kDim, res.dx.begin() + i * kDim);
    }
  }
  return res;
}

inline void ExpectClose(const std::vector<float>& a, const std::vector<float>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_NEAR(a[i], b[i], 1e-5f * std::max(1.0f, std::abs(b[i]))) << what << " [" << i << "]";
  }
}

// A step's checks against standard expert parallelism (outputs, input gradients, the home experts'
// gradients), then an SGD step on both sides' home experts (`base` without taot, `with` with it)
// and the check that their weights still agree.
inline void CheckAndDescend(const Result& got, const Result& want, const std::vector<Weights>& grad,
                            const std::vector<Weights>& base_grad, std::vector<Weights>& base,
                            std::vector<Weights>& with) {
  ExpectClose(got.y, want.y, "outputs");
  ExpectClose(got.dx, want.dx, "input gradients");
  for (size_t k = 0; k < base.size(); ++k) {
    ExpectClose(grad[k], base_grad[k], "expert gradients");
    for (int p = 0; p < kParams; ++p) {
      base[k][p] -= kRate * base_grad[k][p];
      with[k][p] -= kRate * grad[k][p];
    }
    ExpectClose(with[k], base[k], "weights after SGD");
  }
}

// The same initial experts on every rank (rank r keeps experts [r E/R, (r+1) E/R)).
inline std::vector<Weights> InitialExperts() {
  std::mt19937 init(7);
  std::normal_distribution<float> normal(0, 0.5f);
  std::vector<Weights> all(kExperts, Weights(kParams));
  for (Weights& w : all) {
    for (float& v : w) v = normal(init);
  }
  return all;
}

// A rank's next batch, top-1 routed with experts 0, 1 (rank 0's) and 6 hot.
inline Batch NextBatch(std::mt19937& data) {
  std::normal_distribution<float> normal(0, 0.5f);
  std::discrete_distribution<int> skewed({8, 5, 1, 1, 1, 1, 3, 1});
  Batch b;
  for (int i = 0; i < kTokens * kDim; ++i) {
    b.x.push_back(normal(data));
    b.target.push_back(normal(data));
  }
  for (int i = 0; i < kTokens; ++i) b.experts.push_back(skewed(data));
  return b;
}

}  // namespace taot::client::ffn
