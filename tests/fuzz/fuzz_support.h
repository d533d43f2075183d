// What the fuzz targets share: a property that must hold (a broken one is a finding, so it
// aborts like a sanitizer would), and a scratch file for readers that take a path.
#pragma once

#include <unistd.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace taot::fuzz {

// Aborts with `what` when `holds` is false; libFuzzer saves the input that did it.
inline void Require(bool holds, const char* what) {
  if (holds) return;
  std::fprintf(stderr, "taot fuzz: property broken: %s\n", what);
  std::abort();
}

inline std::string_view AsText(const uint8_t* data, size_t size) { return {reinterpret_cast<const char*>(data), size}; }

// One file per process, under a directory of its own (fuzzers may run side by side), rewritten
// for every input. The directory goes when the process exits normally.
class ScratchFile {
 public:
  explicit ScratchFile(const std::string& name) {
    std::string dir = (std::filesystem::temp_directory_path() / "taot-fuzz-XXXXXX").string();
    if (mkdtemp(dir.data()) == nullptr) Require(false, "mkdtemp failed");
    dir_ = dir;
    path_ = (dir_ / name).string();
  }
  ~ScratchFile() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;

  // Replaces the file's content with `bytes`; returns its path.
  const std::string& Write(std::string_view bytes) {
    std::ofstream out(path_, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    Require(static_cast<bool>(out), "cannot write the scratch file");
    return path_;
  }

 private:
  std::filesystem::path dir_;
  std::string path_;
};

}  // namespace taot::fuzz
