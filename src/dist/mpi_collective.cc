// The MPI implementation of dist::Collective (built when CMake finds MPI).
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <vector>

#include "core/error.h"
#include "dist/collective.h"

namespace moex::dist {

namespace {

using Clock = std::chrono::steady_clock;

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  fail("MPI: ", what, " failed: ", std::string(text, size_t(len)));
}

class MpiWorld final : public Collective {
 public:
  MpiWorld(int* argc, char*** argv) {
    int provided = 0;
    // Serialized: `moex serve` runs the engine, and so its collectives, on its scheduler
    // thread; the main thread makes the last call after that thread stopped.
    check(MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
    if (provided < MPI_THREAD_SERIALIZED)
      fail("MPI: this MPI library provides thread level ", provided,
           "; moex needs MPI_THREAD_SERIALIZED");
    check(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
    check(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
    counts_.resize(size_t(size_));
    displs_.resize(size_t(size_));
  }
  ~MpiWorld() override { MPI_Finalize(); }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void allgather(const float* mine, const std::vector<int64_t>& counts,
                 std::vector<float>& all) override {
    if (int(counts.size()) != size_)
      fail("MPI: allgather with ", counts.size(), " counts for ", size_, " ranks");
    int64_t total = 0;
    for (int r = 0; r < size_; ++r) {
      displs_[size_t(r)] = int(total);
      counts_[size_t(r)] = int(counts[size_t(r)]);
      total += counts[size_t(r)];
      if (counts[size_t(r)] < 0 || total > int64_t(INT32_MAX))
        fail("MPI: an allgather of ", total, " floats exceeds MPI's int counts");
    }
    all.resize(size_t(total));
    if (size_ == 1) {
      std::copy(mine, mine + total, all.data());
      return;
    }
    const auto t0 = Clock::now();
    check(MPI_Allgatherv(mine, counts_[size_t(rank_)], MPI_FLOAT, all.data(), counts_.data(),
                         displs_.data(), MPI_FLOAT, MPI_COMM_WORLD),
          "MPI_Allgatherv");
    stats_.calls += 1;
    stats_.bytes_sent += counts[size_t(rank_)] * int64_t(sizeof(float));
    stats_.bytes_received += (total - counts[size_t(rank_)]) * int64_t(sizeof(float));
    stats_.seconds += std::chrono::duration<double>(Clock::now() - t0).count();
  }

  void broadcast_from_root(std::vector<int32_t>& data) override {
    int64_t n = int64_t(data.size());
    check(MPI_Bcast(&n, 1, MPI_INT64_T, 0, MPI_COMM_WORLD), "MPI_Bcast");
    if (n < 0 || n > int64_t(INT32_MAX)) fail("MPI: a broadcast of ", n, " ints");
    data.resize(size_t(n));
    check(MPI_Bcast(data.data(), int(n), MPI_INT32_T, 0, MPI_COMM_WORLD), "MPI_Bcast");
  }

  std::vector<double> gather_to_root(const std::vector<double>& values) override {
    std::vector<double> all(rank_ == 0 ? values.size() * size_t(size_) : 0);
    check(MPI_Gather(values.data(), int(values.size()), MPI_DOUBLE, all.data(), int(values.size()),
                     MPI_DOUBLE, 0, MPI_COMM_WORLD),
          "MPI_Gather");
    return all;
  }

  [[noreturn]] void abort(int exit_code) override {
    MPI_Abort(MPI_COMM_WORLD, exit_code);
    std::_Exit(exit_code);
  }

 private:
  int rank_ = 0, size_ = 1;
  std::vector<int> counts_, displs_;
};

}  // namespace

bool mpi_available() { return true; }

std::unique_ptr<Collective> mpi_world(int* argc, char*** argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) fail("MPI: mpi_world() called twice in one process");
  return std::make_unique<MpiWorld>(argc, argv);
}

}  // namespace moex::dist
