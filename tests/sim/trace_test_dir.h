// A fresh temporary directory per test, and the files the trace tests write into it: text as
// given, and NPY files with any header fields, so that a test can build exactly the malformed
// file it is about.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace taot::sim {

class TraceTestDir : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = (std::filesystem::path(::testing::TempDir()) / "taot_trace_test" /
            (std::string(info->test_suite_name()) + "." + info->name()))
               .string();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Path(const std::string& name) const { return (std::filesystem::path(dir_) / name).string(); }

  void WriteText(const std::string& name, const std::string& text) const {
    std::ofstream(Path(name), std::ios::binary) << text;
  }

  // A version 1.0 NPY file with the given header fields and raw data bytes.
  void WriteNpy(const std::string& name, const std::string& descr, const std::string& shape, const std::string& data,
                bool fortran = false) const {
    std::string dict =
        "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") + ", 'shape': " + shape + ", }";
    while ((10 + dict.size() + 1) % 64 != 0) dict += ' ';
    dict += '\n';
    std::string out("\x93NUMPY\x01\x00", 8);
    out += char(dict.size() & 0xff);
    out += char(dict.size() >> 8);
    WriteText(name, out + dict + data);
  }

  // Little-endian data of `bytes` (1, 2, 4 or 8) per value.
  static std::string LittleEndian(const std::vector<int64_t>& values, int bytes) {
    std::string out;
    for (int64_t v : values) {
      for (int i = 0; i < bytes; ++i) out += char((uint64_t(v) >> (8 * i)) & 0xff);
    }
    return out;
  }
  static std::string I4(const std::vector<int64_t>& values) { return LittleEndian(values, 4); }

  std::string dir_;
};

}  // namespace taot::sim
