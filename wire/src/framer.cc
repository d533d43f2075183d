#include "taot/wire/framer.h"

namespace taot::wire {
namespace {

void AppendVarint(std::string& out, uint64_t value) {
  for (; value >= 0x80; value >>= 7) out.push_back(static_cast<char>((value & 0x7F) | 0x80));
  out.push_back(static_cast<char>(value));
}

}  // namespace

grpc::Slice SharedSlice(SharedBytes piece) {
  auto* keep = new std::shared_ptr<const void>(std::move(piece.owner));
  // gRPC never writes into a slice it sends; its constructor only takes a mutable pointer.
  return grpc::Slice(
      const_cast<char*>(piece.bytes.data()), piece.bytes.size(),
      [](void* p) { delete static_cast<std::shared_ptr<const void>*>(p); }, keep);
}

grpc::ByteBuffer MessageBuffer(SharedBytes message) {
  grpc::Slice slice = SharedSlice(std::move(message));
  return grpc::ByteBuffer(&slice, 1);
}

std::string LengthDelimitedHead(uint32_t field_number, uint64_t length) {
  constexpr uint64_t kLengthDelimited = 2;
  std::string head;
  AppendVarint(head, uint64_t{field_number} << 3 | kLengthDelimited);
  AppendVarint(head, length);
  return head;
}

grpc::ByteBuffer RepeatedFieldBuffer(uint32_t field_number, std::vector<SharedBytes> elements) {
  std::vector<grpc::Slice> slices;
  slices.reserve(2 * elements.size());
  for (SharedBytes& element : elements) {
    slices.emplace_back(LengthDelimitedHead(field_number, element.bytes.size()));
    slices.push_back(SharedSlice(std::move(element)));
  }
  return grpc::ByteBuffer(slices.data(), slices.size());
}

}  // namespace taot::wire
