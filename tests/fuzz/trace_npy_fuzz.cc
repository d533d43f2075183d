// Recorded traces in numpy's format (`taot-sim --trace DIR` with layer_NNN.npy files).
#include "trace_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  taot::fuzz::ReadTraceFile("layer_000.npy", data, size);
  return 0;
}
