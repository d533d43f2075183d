// Messages framed by hand around bytes already encoded, so that bytes shared by many answers (a
// round's plan goes to every rank) reach gRPC without a copy or a second encoding.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>

namespace taot::wire {

// Encoded bytes and whatever keeps them alive: gRPC holds `owner` until it has sent them.
struct SharedBytes {
  std::string_view bytes;
  std::shared_ptr<const void> owner;
};

grpc::Slice SharedSlice(SharedBytes piece);
// One message that is `message`'s bytes as they are.
grpc::ByteBuffer MessageBuffer(SharedBytes message);

// The key and length that precede an element of a repeated message field `field_number` (wire
// type 2, length-delimited): the key as a varint, then the length as a varint.
std::string LengthDelimitedHead(uint32_t field_number, uint64_t length);

// The encoding of a message whose repeated message field `field_number` holds `elements`, in
// order, and nothing else: in protobuf's encoding that is each element's head and bytes, one
// after the other.
grpc::ByteBuffer RepeatedFieldBuffer(uint32_t field_number, std::vector<SharedBytes> elements);

}  // namespace taot::wire
