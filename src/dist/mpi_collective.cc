// The MPI implementation of dist::Collective (built when CMake finds MPI).
#include <mpi.h>

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
    check(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    check(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
    check(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
  }
  ~MpiWorld() override { MPI_Finalize(); }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void sum_in_rank_order(float* data, int64_t n) override {
    if (size_ == 1 || n == 0) return;
    if (n > int64_t(INT32_MAX)) fail("MPI: a reduction of ", n, " floats exceeds MPI's int count");
    const auto t0 = Clock::now();
    all_.resize(size_t(n) * size_t(size_));
    check(MPI_Allgather(data, int(n), MPI_FLOAT, all_.data(), int(n), MPI_FLOAT, MPI_COMM_WORLD),
          "MPI_Allgather");
    // Rank 0's part first, then each further rank's, in order: the same additions on every rank.
    for (int64_t i = 0; i < n; ++i) {
      float s = all_[size_t(i)];
      for (int r = 1; r < size_; ++r) s += all_[size_t(r) * size_t(n) + size_t(i)];
      data[i] = s;
    }
    stats_.calls += 1;
    stats_.bytes_sent += n * int64_t(sizeof(float));
    stats_.bytes_received += n * int64_t(sizeof(float)) * (size_ - 1);
    stats_.seconds += std::chrono::duration<double>(Clock::now() - t0).count();
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
  std::vector<float> all_;
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
