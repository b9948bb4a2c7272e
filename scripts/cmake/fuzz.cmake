# libFuzzer targets (PADDLEC_FUZZ=ON; scripts/fuzz.sh configures this tree in build-fuzz/ with clang).
# Only the object libraries the targets need are compiled, a second time, instrumented: coverage for
# libFuzzer, ASan, and UBSan where the parsers and checks live. The ops layer (Eigen and oneDNN
# kernels, which the targets never run: they only register the ops and infer shapes) is compiled at
# -O0 with coverage and ASan but without UBSan, which would double its compile time; that keeps the
# tree's cold build to a few minutes on two cores (README, "Fuzzing").
if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "PADDLEC_FUZZ needs clang (libFuzzer): configure with CC=clang CXX=clang++ (scripts/fuzz.sh)")
endif()

set(PC_FUZZ_SANITIZE -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
    -fno-omit-frame-pointer)
foreach(layer core ir runtime io passes)
  target_compile_options(pc_obj_${layer} PRIVATE -O1 -g1 ${PC_FUZZ_SANITIZE})
endforeach()
foreach(layer proto ops)
  target_compile_options(pc_obj_${layer} PRIVATE -O0 -fsanitize=fuzzer-no-link,address -fno-omit-frame-pointer)
endforeach()

# name:source:layers beyond the base ones it links (each layer's objects once: protobuf aborts on a
# second registration of the same descriptors).
set(PC_FUZZ_BASE proto core ir runtime)
set(PC_FUZZ_TARGETS
    "program:src/ir/program_fuzzer.cc:ops,passes"
    "pir:src/ir/pir/pir_fuzzer.cc:ops,passes"
    "npy:src/io/npy_fuzzer.cc:io"
    "params:src/io/params_fuzzer.cc:io"
    "checkpoint:src/io/checkpoint_fuzzer.cc:io")
add_custom_target(fuzzers)
foreach(spec ${PC_FUZZ_TARGETS})
  string(REPLACE ":" ";" parts "${spec}")
  list(GET parts 0 name)
  list(GET parts 1 source)
  list(SUBLIST parts 2 -1 extra)
  string(REPLACE "," ";" extra "${extra}")
  set(exe fuzz_${name})
  add_executable(${exe} ${source})
  # Naming an object library links its objects (and its usage requirements); each layer is named once.
  foreach(layer ${PC_FUZZ_BASE} ${extra})
    target_link_libraries(${exe} PRIVATE pc_obj_${layer})
  endforeach()
  target_include_directories(${exe} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src)
  target_compile_options(${exe} PRIVATE -O1 -g1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined)
  target_link_options(${exe} PRIVATE -fsanitize=fuzzer,address,undefined)
  add_dependencies(fuzzers ${exe})
endforeach()
