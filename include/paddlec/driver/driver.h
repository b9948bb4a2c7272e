// The driver: one function per `paddlec` subcommand, callable in-process.
//
// tools/paddlec/main.cc only parses flags into these option structs and calls Run<Command>;
// tests call the same functions. Each returns a Status; PrintError renders a failure the way the
// CLI does (error:/note: lines on stderr).
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "paddlec/core/error.h"

namespace paddlec::driver {

/// Writes `e` as "error: ..." and "note: ..." lines.
void PrintError(const Error& e, std::ostream& err);

/// The default compile pipeline for inference programs.
inline constexpr const char* kDefaultPipeline = "validate,infer-shape";

struct CompileOptions {
  std::string input;
  std::string input_format;   // "" = from the extension or the content
  std::string output;         // "" = write nothing; "-" = stdout
  std::string output_format;  // "" = from the output's extension (text on stdout)
  bool print_shapes = false;
  std::string passes = kDefaultPipeline;
  std::string pipeline_file;  // a PassPipeline textproto; replaces `passes`
  std::vector<std::string> print_ir_after;
  bool verify_each = false;
  int stop_after = -1;
  bool time_passes = false;
};

/// `paddlec compile`: parse, run the pass pipeline, write the CompiledProgram.
Status RunCompile(const CompileOptions& options, std::ostream& out);

struct DumpOpProtosOptions {
  std::string format = "json";  // json | text | md
  std::vector<std::string> ops;  // empty = all
};

/// `paddlec dump-opprotos`: every registered OpProto with defaults and checks, sorted by type.
Status RunDumpOpProtos(const DumpOpProtosOptions& options, std::ostream& out);

}  // namespace paddlec::driver
