// Reading and writing programs in the three formats: text (.pbtxt), binary (.pb, .pdmodel) and
// JSON (.json). The loader accepts a bare ProgramDesc (PaddlePaddle's or ours) or a CompiledProgram
// in any format and returns a Module either way.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <google/protobuf/message.h>

#include "paddlec/core/error.h"
#include "paddlec/ir/program.h"

namespace paddlec::ir {

enum class Format { kText, kBinary, kJson };

std::string_view FormatName(Format f);
/// "text"/"pbtxt", "binary"/"pb", "json".
StatusOr<Format> ParseFormat(std::string_view name);
/// The format implied by a file name: .pbtxt/.prototxt/.textproto/.txt, .pb/.pdmodel/.bin, .json.
std::optional<Format> FormatFromPath(std::string_view path);
/// True for files that hold a bare ProgramDesc, never a CompiledProgram: .pdmodel and __model__,
/// which PaddlePaddle reads.
bool IsBareProgramPath(std::string_view path);

/// Loads a Module from a file; `format` overrides the extension, and when neither tells, the
/// content is sniffed (JSON object, printable text, else binary).
StatusOr<std::unique_ptr<Module>> LoadModule(const std::string& path, std::optional<Format> format = {});
/// Same, from bytes already in memory; `display_name` is what diagnostics call the input.
StatusOr<std::unique_ptr<Module>> ParseModule(std::string_view bytes, Format format,
                                              const std::string& display_name);
/// Parses a bare ProgramDesc (e.g. PaddlePaddle's separate startup program).
StatusOr<pb::ProgramDesc> LoadProgramDesc(const std::string& path, std::optional<Format> format = {});

/// Deterministic serialization of any message in a format (binary: unpacked repeated scalars as
/// PaddlePaddle writes them, fields in number order; text and JSON: protobuf's canonical printers).
StatusOr<std::string> Serialize(const google::protobuf::Message& m, Format format);
/// Serializes the module as a CompiledProgram and writes it atomically.
Status SaveModule(const Module& module, const std::string& path, Format format);
/// Writes only the main program, as a bare ProgramDesc (what PaddlePaddle reads as a .pdmodel).
Status SaveProgramDesc(const pb::ProgramDesc& program, const std::string& path, Format format);

}  // namespace paddlec::ir
