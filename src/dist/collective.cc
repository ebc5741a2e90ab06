// What every build has: whether mpirun started this process; and, without MPI, the refusal.
#include <cstdlib>

#include "core/error.h"
#include "dist/collective.h"

namespace moex::dist {

bool launched_by_mpirun() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"})
    if (std::getenv(v) != nullptr) return true;
  return false;
}

#ifndef MOEX_HAVE_MPI
bool mpi_available() { return false; }

std::unique_ptr<Collective> mpi_world(int*, char***) {
  fail("--expert-parallel: this moex was built without MPI (apt-get install libopenmpi-dev "
       "openmpi-bin, then rebuild)");
}
#endif

}  // namespace moex::dist
