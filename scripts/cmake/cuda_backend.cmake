# libpaddlec_cuda.so: the CUDA kernels (.cu twins of the op families), the CUDA device context and
# allocator, and the entry point of src/exec/cuda/backend_api.h. The executor dlopens it when a GPU
# place is first requested, so nothing on the CPU path ever loads CUDA's libraries.
# Device code lives in the families' .cu files, which include no paddlec headers (fmt and protobuf
# do not compile under nvcc's C++20 front end); each family's <family>_cuda.cc wraps its launchers
# as paddlec kernels and registers them, compiled by the host compiler.
file(GLOB_RECURSE PC_CUDA_SRCS CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/*.cu
     ${CMAKE_CURRENT_SOURCE_DIR}/src/*_cuda.cc ${CMAKE_CURRENT_SOURCE_DIR}/src/runtime/cuda/*.cc
     ${CMAKE_CURRENT_SOURCE_DIR}/src/exec/cuda/*.cc)
list(FILTER PC_CUDA_SRCS EXCLUDE REGEX "_test\\.(cc|cu)$")
add_library(paddlec_cuda MODULE ${PC_CUDA_SRCS})
target_include_directories(paddlec_cuda PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src ${CMAKE_CURRENT_SOURCE_DIR}/src/ops)
# The backend uses the one libpaddlec.so of the process (its registry, its protobuf descriptors).
target_link_libraries(paddlec_cuda PRIVATE paddlec_lib CUDA::cudart CUDA::cublas CUDNN::cudnn NCCL::nccl)
target_link_options(paddlec_cuda PRIVATE "LINKER:--no-undefined")
target_compile_options(paddlec_cuda PRIVATE
  "$<$<COMPILE_LANGUAGE:CUDA>:--extended-lambda;--expt-relaxed-constexpr;-Werror=all-warnings;-Xcompiler=-fvisibility=hidden>"
  "$<$<COMPILE_LANGUAGE:CXX>:-fvisibility=hidden>")
# The host wrappers are short; parsing the CUDA runtime's and the registry's headers was a third of
# each one's compile (CMake precompiles headers for C and C++ only: the .cu files are untouched).
pc_precompile_headers(paddlec_cuda <cuda_runtime.h> <functional> <memory> <string> <vector>
                      ${CMAKE_CURRENT_SOURCE_DIR}/include/paddlec/ops/op_registry.h)
set_target_properties(paddlec_cuda PROPERTIES CUDA_SEPARABLE_COMPILATION OFF
                      LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
add_dependencies(paddlec paddlec_cuda)
