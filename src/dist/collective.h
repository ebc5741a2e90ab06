// The collectives an expert-parallel run needs, behind an interface so that the engine does
// not depend on MPI (dist/mpi_collective.cc implements it over MPI; a single process needs
// none). Every call is made by every rank in the same order.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace moex::dist {

// What the collectives cost this rank so far.
struct CollectiveStats {
  int64_t calls = 0;
  int64_t bytes_sent = 0, bytes_received = 0;  // payload of this rank, not the transport's
  double seconds = 0;                          // wall time inside the calls
};

class Collective {
 public:
  virtual ~Collective() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // all <- every rank's `mine` concatenated in rank order, on every rank; counts[r] is rank r's
  // element count (each rank passes the same counts; mine holds counts[rank()]). all is
  // resized to the total.
  virtual void allgather(const float* mine, const std::vector<int64_t>& counts,
                         std::vector<float>& all) = 0;
  // data <- rank 0's data on every rank (its size too).
  virtual void broadcast_from_root(std::vector<int32_t>& data) = 0;
  // Rank 0 gets every rank's values (rank-major, each rank giving the same count); other
  // ranks get an empty vector.
  virtual std::vector<double> gather_to_root(const std::vector<double>& values) = 0;
  // Stops every rank (after an error on one of them, so the others do not wait forever).
  [[noreturn]] virtual void abort(int exit_code) = 0;
  const CollectiveStats& stats() const { return stats_; }
  void reset_stats() { stats_ = {}; }

 protected:
  CollectiveStats stats_;
};

// Whether this build has the MPI backend (CMake found MPI).
bool mpi_available();
// Initializes MPI (once per process) and returns the world communicator as a Collective.
// moex::Error when the build has no MPI. Finalizes MPI when destroyed.
std::unique_ptr<Collective> mpi_world(int* argc, char*** argv);
// Whether this process was started by mpirun/mpiexec (their environment variables), so that
// a tool can refuse --expert-parallel outside one, or warn when run with one but without it.
bool launched_by_mpirun();

}  // namespace moex::dist
