// numpy's .npy format (https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html),
// as much of it as integer traces need: the 8-byte magic and version, a little-endian header
// length, a header that is the repr() of a Python dict, then the raw array. Nothing here reads
// or writes files; trace_npy.h does, for traces.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace taot::sim {

// numpy's own reader refuses headers over 10,000 bytes by default; np.save writes under 200.
inline constexpr uint64_t kMaxNpyHeaderBytes = 65536;

// What the first 8 bytes of a file (fewer when it is shorter) say about it: the size of the
// header-length field that follows them, 2 bytes in version 1.0 and 4 in 2.0 and 3.0. Errors
// say why the bytes are not NPY's magic and a supported version.
absl::StatusOr<int> NpyHeaderLengthBytes(std::string_view first_bytes);

struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

// The header's dict literal: exactly the keys 'descr' (a plain dtype string), 'fortran_order'
// and 'shape' (a tuple of non-negative integers, Python 2's 5L too), in any order. Errors quote
// at most a short prefix of the text.
absl::StatusOr<NpyHeader> ParseNpyHeader(std::string_view text);

struct NpyIntType {
  int bytes = 0;
  bool is_signed = false;
};

// Only little-endian (or byte-sized) integers, what np.save writes on every machine one would
// train on; the error for a big-endian one says how to convert it.
absl::StatusOr<NpyIntType> ParseNpyDtype(const std::string& descr);

// The unsigned value of `bytes` (1 to 8) little-endian bytes at `p`.
uint64_t ReadLittleEndian(const unsigned char* p, int bytes);

// The element of `type` at `p`, sign-extended when the type is signed (its bits as int64 then).
uint64_t DecodeNpyInteger(const unsigned char* p, NpyIntType type);

// A shape the way numpy prints it: (2, 3), and a 1-tuple as (2,).
std::string NpyShapeString(const std::vector<int64_t>& shape);

// "[2, 3, 17]": where numpy would index the element with C-order flat index `flat`.
std::string NpyElementIndex(uint64_t flat, const std::vector<int64_t>& shape);

// The magic, version and header of a C-order little-endian int64 array of `shape`, as np.save
// writes it: version 1.0 unless the header needs 2.0, space-padded and ending in '\n' so that
// the data starts 64-byte aligned.
std::string NpyInt64Preamble(const std::vector<int64_t>& shape);

// Appends `values` as little-endian int64, NPY's '<i8' data.
void AppendLittleEndian(std::string& out, std::span<const int64_t> values);

}  // namespace taot::sim
