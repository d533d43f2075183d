#include "nccl_wait.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace taot::client {

absl::Status Nccl(ncclResult_t r, const char* what) {
  if (r == ncclSuccess || r == ncclInProgress) return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat(what, ": ", ncclGetErrorString(r)));
}

NcclComm::~NcclComm() {
  if (comm != nullptr && !aborted) ncclCommDestroy(comm);
}

absl::Status NcclComm::Usable(const char* what) const {
  if (!aborted) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat(what, ": the communicator was aborted after a peer did not answer; connect again"));
}

absl::Status NcclComm::Await(cudaEvent_t event, absl::Time deadline, const char* what) {
  return AwaitComm(*this, event, deadline, what);
}

absl::Status AwaitComm(NcclComm& comm, cudaEvent_t event, absl::Time deadline, const char* what) {
  if (absl::Status s = comm.Usable(what); !s.ok()) return s;
  while (true) {
    ncclResult_t state = ncclSuccess;
    if (absl::Status s = Nccl(ncclCommGetAsyncError(comm.comm, &state), what); !s.ok()) return s;
    if (state != ncclSuccess && state != ncclInProgress) return Nccl(state, what);
    const bool comm_done = state == ncclSuccess;
    bool event_done = true;
    if (event != nullptr) {
      const cudaError_t q = cudaEventQuery(event);
      if (q != cudaSuccess && q != cudaErrorNotReady) return Cuda(q, what);
      event_done = q == cudaSuccess;
    }
    if (comm_done && event_done) return absl::OkStatus();
    if (absl::Now() > deadline) {
      ncclCommAbort(comm.comm);
      comm.aborted = true;
      return absl::DeadlineExceededError(
          absl::StrCat(what, ": a peer did not answer in time; the communicator is aborted"));
    }
    absl::SleepFor(absl::Microseconds(20));
  }
}

}  // namespace taot::client
