// Recorded traces as CSV (`taot-sim --trace DIR` with layer_NNN.csv files).
#include "trace_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  taot::fuzz::ReadTraceFile("layer_000.csv", data, size);
  return 0;
}
