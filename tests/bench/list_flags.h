// The benchmarks' comma-separated flag values (--ranks 16,64,256, --planners taot,echo).
#pragma once

#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

namespace taot::bench {

inline std::vector<std::string> Split(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  return out;
}

inline std::vector<int> Ints(const std::string& text) {
  std::vector<int> out;
  for (const std::string& v : Split(text)) out.push_back(std::atoi(v.c_str()));
  return out;
}

}  // namespace taot::bench
