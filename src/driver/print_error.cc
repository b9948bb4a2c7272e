// How the CLI renders errors, and how a failing rank of a data-parallel run stops the others.
#include <ostream>

#include "paddlec/driver/driver.h"
#include "paddlec/runtime/comm.h"

namespace paddlec::driver {

void PrintError(const Error& e, std::ostream& err) { err << e.Render(); }

void StopOtherRanks(std::ostream& err) {
  runtime::Communicator* comm = runtime::WorldCommunicatorIfCreated();
  if (comm == nullptr || comm->size() < 2) return;
  err << "note: the error happened on rank " << comm->rank() << " of " << comm->size() << "; stopping every rank\n"
      << std::flush;
  comm->Abort(1);
}

}  // namespace paddlec::driver
