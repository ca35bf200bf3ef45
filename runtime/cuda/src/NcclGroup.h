// An NCCL group that is always ended. Between ncclGroupStart and ncclGroupEnd
// NCCL collects a thread's calls instead of issuing them, so a group left
// open by an exception (a missing communicator, a failed ncclSend) would swallow
// every later NCCL call of the thread, the error path's aborts included.
// NcclGroup starts the group; end() ends it and returns what ncclGroupEnd
// said, for the caller to check and settle; a group not ended when an exception
// leaves the scope is ended by the destructor, its result ignored (the
// exception already says what went wrong, and the caller aborts the
// communicators, which fails whatever the partial group issued).
#pragma once

#include "pipert/cuda/CudaCheck.h"

#include <nccl.h>

namespace pipert::cuda {

class NcclGroup {
public:
  NcclGroup() { PIPERT_NCCL(ncclGroupStart(), nullptr); }
  ~NcclGroup() {
    if (open_)
      ncclGroupEnd();
  }
  NcclGroup(const NcclGroup &) = delete;
  NcclGroup &operator=(const NcclGroup &) = delete;

  ncclResult_t end() {
    open_ = false;
    return ncclGroupEnd();
  }

private:
  bool open_ = true;
};

} // namespace pipert::cuda
