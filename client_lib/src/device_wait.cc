#include "device_wait.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace taot::client {

absl::Status Cuda(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat(what, ": ", cudaGetErrorString(e)));
}

absl::Status AwaitEvent(cudaEvent_t event, absl::Time deadline, const char* what) {
  while (true) {
    const cudaError_t q = cudaEventQuery(event);
    if (q == cudaSuccess) return absl::OkStatus();
    if (q != cudaErrorNotReady) return Cuda(q, what);
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(absl::StrCat(what, ": the device work did not finish in time"));
    }
    absl::SleepFor(absl::Microseconds(20));
  }
}

}  // namespace taot::client
