# libpaddlec_cuda.so: CUDA kernels (.cu twins of the op families), the CUDA device context and
# allocator. Loaded with dlopen by the runtime when a GPU place is requested.
file(GLOB_RECURSE PC_CUDA_SRCS CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/*.cu
     ${CMAKE_CURRENT_SOURCE_DIR}/src/runtime/cuda/*.cc)
add_library(paddlec_cuda MODULE ${PC_CUDA_SRCS})
target_include_directories(paddlec_cuda PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src ${CMAKE_CURRENT_SOURCE_DIR}/src/ops)
target_link_libraries(paddlec_cuda PRIVATE pc_ops CUDA::cudart CUDA::cublas CUDNN::cudnn)
target_compile_options(paddlec_cuda PRIVATE
  "$<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr;-Xcompiler=-fPIC;-Werror=all-warnings>")
set_target_properties(paddlec_cuda PROPERTIES CUDA_SEPARABLE_COMPILATION OFF
                      LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
add_dependencies(paddlec paddlec_cuda)
