# `mpirun -np R moex ... --expert-parallel` end to end (label mpi): parity with the single
# process on five tiny families, per-rank reads, and errors. Included by tools/CMakeLists.txt
# when MPI was found.
add_test(NAME expert_parallel_test
  COMMAND ${MOEX_PYTHON} ${CMAKE_SOURCE_DIR}/src/dist/expert_parallel_test.py
          --moex $<TARGET_FILE:moex> --mpiexec ${MPIEXEC_EXECUTABLE}
          --work ${CMAKE_CURRENT_BINARY_DIR}/expert_parallel)
set_tests_properties(expert_parallel_test PROPERTIES LABELS "mpi;reference" TIMEOUT 900)
