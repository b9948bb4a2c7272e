# One doctest binary per layer, each one ctest entry (a process per test case would pay start-up
# cost per case). Test sources sit next to the code they test: src/<layer>/**/*_test.cc.
add_library(pc_test_main STATIC src/testing/doctest_main.cc)
target_link_libraries(pc_test_main PUBLIC doctest::doctest pc_core)
target_include_directories(pc_test_main PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/src)
target_compile_definitions(pc_test_main PUBLIC
  PADDLEC_SOURCE_DIR="${CMAKE_CURRENT_SOURCE_DIR}" PADDLEC_BINARY_DIR="${CMAKE_BINARY_DIR}")

file(GLOB PC_TESTING_SRCS CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/testing/*.cc)
list(REMOVE_ITEM PC_TESTING_SRCS ${CMAKE_CURRENT_SOURCE_DIR}/src/testing/doctest_main.cc)
list(FILTER PC_TESTING_SRCS EXCLUDE REGEX "_test\\.cc$")
add_library(pc_testing STATIC ${PC_TESTING_SRCS} src/testing/empty.cc)
target_link_libraries(pc_testing PUBLIC pc_test_main pc_driver)

# Test code is compiled at -O1 in optimised builds: the kernels it calls are the library's (-O3), and
# the test files took a quarter of the build's CPU time at -O3 and compile ~40 % faster at -O1.
set(PC_TEST_OPT $<$<CONFIG:Release,RelWithDebInfo,MinSizeRel>:-O1>)
target_compile_options(pc_test_main PRIVATE ${PC_TEST_OPT})
target_compile_options(pc_testing PRIVATE ${PC_TEST_OPT})

function(pc_layer_test layer)
  file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/${layer}/*_test.cc)
  if(NOT srcs)
    return()
  endif()
  add_executable(${layer}_test ${srcs})
  target_include_directories(${layer}_test PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src/${layer})
  target_link_libraries(${layer}_test PRIVATE pc_testing)
  target_compile_options(${layer}_test PRIVATE ${PC_TEST_OPT})
  # doctest and the op tester (which brings the protobuf-generated descriptors) in every test file.
  pc_precompile_headers(${layer}_test <doctest/doctest.h> <cmath> <string> <vector>
                        ${CMAKE_CURRENT_SOURCE_DIR}/src/testing/op_tester.h)
  add_test(NAME ${layer}_test COMMAND ${layer}_test WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})
  set_tests_properties(${layer}_test PROPERTIES LABELS "unit;${layer}")
endfunction()

foreach(layer core ir runtime ops passes exec io driver testing)
  pc_layer_test(${layer})
endforeach()

# The kernels that choose AVX-512 or AVX2 register tiles at run time (common/microkernel.h's
# TilesUseAvx512) once more with PADDLEC_AVX512=off: on a CPU whose tiles run on AVX-512, as CI's,
# ops_test alone would never run the AVX2 paths.
add_test(NAME ops_avx2_test COMMAND ops_test "-tc=fc*,matmul*,mul*,*conv*,*winograd*,*pool*"
         WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})
set_tests_properties(ops_avx2_test PROPERTIES LABELS "unit;ops" ENVIRONMENT "PADDLEC_AVX512=off")

# CLI transcripts: run the real binary on testdata/cli/*.test and compare stdout/stderr/exit code.
add_test(NAME cli_test
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/scripts/run_cli_tests.py
                 --paddlec $<TARGET_FILE:paddlec> --root ${CMAKE_CURRENT_SOURCE_DIR}
         WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})
set_tests_properties(cli_test PROPERTIES LABELS "cli")

# The `gpu` label: every kernel against its CPU twin and the references, gradient checks on the GPU,
# GPU runtime behaviour and a GPU training run. Skipped (exit 77) where no GPU is usable, as in CI.
add_test(NAME gpu_test COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/scripts/gpu_tests.sh ${CMAKE_BINARY_DIR}
         WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})
set_tests_properties(gpu_test PROPERTIES LABELS "gpu" SKIP_RETURN_CODE 77)

# setup.sh must install every Debian package the configured build uses (a fresh machine has only what
# it installs). The second entry shows the check catching the package list of e95c800, which lacked
# ocl-icd-opencl-dev (oneDNN's CMake config needs OpenCL's dev files; libdnnl-dev only recommends them).
add_test(NAME setup_deps_test
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check_setup_deps.py
                 --build ${CMAKE_BINARY_DIR} --setup ${CMAKE_CURRENT_SOURCE_DIR}/scripts/setup.sh)
add_test(NAME setup_deps_catches_e95c800
         COMMAND /bin/sh -c "out=$(/usr/bin/python3 scripts/check_setup_deps.py --build '${CMAKE_BINARY_DIR}' \
                 --setup testdata/setup/setup-e95c800.sh); rc=$?; echo \"$out\"; \
                 [ $rc -eq 1 ] && echo \"$out\" | grep -q '^  ocl-icd-opencl-dev  <- .*libOpenCL'"
         WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})
set_tests_properties(setup_deps_test setup_deps_catches_e95c800 PROPERTIES LABELS "setup")

# A tool the tests and scripts run (Graphviz renders --emit=dot graphs). Found here so its path lands
# in CMakeCache.txt, where the setup check sees it.
find_program(PADDLEC_DOT_EXECUTABLE dot)

# The generated docs (docs/ops.md, docs/passes.md, docs/paddle_ops.md) must match the registry, passes.def
# and the PIR translation table; the failure names the one command that regenerates them (scripts/gen_docs.py).
add_test(NAME docs_test
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/scripts/gen_docs.py --check --paddlec $<TARGET_FILE:paddlec>
         WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})
set_tests_properties(docs_test PROPERTIES LABELS "docs")

# Comments cite files in this repository (docs/ holds the facts), never notes outside it.
add_test(NAME citations_test
         COMMAND /bin/sh -c "if grep -rnE --exclude=tests.cmake 'shared/reference|/work/shared|\\.\\./shared' src include proto tools/paddlec tools/python/paddlec scripts; then echo 'these lines cite files outside the repository: move the facts into docs/ and cite that'; exit 1; fi"
         WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})
set_tests_properties(citations_test PROPERTIES LABELS "docs")

# Data parallelism on 2 ranks of Open MPI (2 cores in CI: --oversubscribe; root in containers:
# --allow-run-as-root). The passes_test cases compare 2 ranks of batch B with 1 process on 2B, the
# MLP and LeNet with sync_bn (src/passes/data_parallel_test.cc); the CLI transcripts under testdata/cli-mpi run `mpirun paddlec`.
find_program(PADDLEC_MPIRUN_EXECUTABLE mpirun)
if(PADDLEC_MPIRUN_EXECUTABLE)
  set(PC_MPIRUN_2 "${PADDLEC_MPIRUN_EXECUTABLE} -np 2 --oversubscribe $([ \"$(id -u)\" = 0 ] && echo --allow-run-as-root)")
  # Both ranks must have run both cases (a renamed case would otherwise match nothing and pass).
  add_test(NAME data_parallel_mpi_test
           COMMAND /bin/sh -c "out=$(${PC_MPIRUN_2} $<TARGET_FILE:passes_test> --no-skip --no-colors \
                   -tc='data-parallel: 2 ranks*' 2>&1); rc=$?; echo \"$out\"; [ $rc -eq 0 ] && \
                   [ $(echo \"$out\" | grep -c 'test cases: *2 | *2 passed') -eq 2 ]"
           WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})
  set_tests_properties(data_parallel_mpi_test PROPERTIES LABELS "mpi" TIMEOUT 120)
endif()
