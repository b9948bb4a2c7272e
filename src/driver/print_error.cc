// How the CLI renders errors, and how a failing rank of a data-parallel run stops the others.
#include <ostream>
#include <string>

#include "paddlec/driver/driver.h"
#include "paddlec/runtime/comm.h"

namespace paddlec::driver {

void PrintError(const Error& e, std::ostream& err) { err << e.Render(); }

void StopOtherRanks(std::ostream& err) { StopOtherRanks(runtime::WorldCommunicatorIfCreated(), err); }

void StopOtherRanks(runtime::Communicator* comm, std::ostream& err) {
  if (comm == nullptr || comm->size() < 2) return;
  // One write: std::cerr is unbuffered, so each << would be a write of its own, and mpirun's
  // relay of this rank's stderr could put MPI_Abort's banner in the middle of the line.
  const std::string note = "note: the error happened on rank " + std::to_string(comm->rank()) + " of " +
                           std::to_string(comm->size()) + "; stopping every rank\n";
  err.write(note.data(), static_cast<std::streamsize>(note.size()));
  err.flush();
  comm->Abort(1);
}

}  // namespace paddlec::driver
