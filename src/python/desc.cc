// ProgramDesc, BlockDesc, OpDesc and VarDesc for Python: handles into a C++-owned ProgramDesc.
//
// Appending an op runs the same checks as the validate and infer-shape passes on that op alone
// (ops::CheckOp with defaults filled, then ops::InferShapeAtCompileTime), and undoes the append
// when either fails, so a Python program is always one the compiler accepts.
#include <pybind11/stl.h>

#include <cfloat>
#include <climits>
#include <cmath>
#include <map>
#include <set>

#include "bindings.h"
#include "paddlec/ir/serialize.h"
#include "paddlec/ops/attrs.h"
#include "paddlec/ops/op_checker.h"
#include "paddlec/ops/op_registry.h"

namespace paddlec::python {

// ---- ProgramState ---------------------------------------------------------------------------

ProgramState::ProgramState() : program_(ir::Program::CreateEmpty()) {}

ProgramState::ProgramState(pb::ProgramDesc desc) { program_ = ValueOrThrow(ir::Program::CreateOwned(std::move(desc))); }

void ProgramState::Replace(pb::ProgramDesc desc) {
  program_ = ValueOrThrow(ir::Program::CreateOwned(std::move(desc)));
  Invalidate();
}

ir::Block& ProgramState::block(int idx) const {
  if (idx < 0 || idx >= program_->num_blocks())
    throw PaddlecException(
        MakeError(ErrorCode::kNotFound, "block {} does not exist (the program has {})", idx, program_->num_blocks()));
  return program_->block(idx);
}

namespace {

const ops::OpRegistry& Registry() { return ops::GlobalOpRegistry(); }

// ---- Attribute values -----------------------------------------------------------------------

std::string Repr(py::handle v) {
  std::string r = py::repr(v).cast<std::string>();
  return r.size() > 60 ? r.substr(0, 57) + "..." : r;
}

std::string TypeName(py::handle v) { return py::str(py::type::handle_of(v).attr("__name__")).cast<std::string>(); }

/// Converts Python values to an attribute of one AttrType, failing with a message that names the
/// op and the attribute.
class AttrConverter {
 public:
  /// `arg`: the keyword the value was passed as, named in messages when it differs from `name`.
  AttrConverter(const std::string& op, const std::string& name, pb::AttrType type, const std::string& arg = "")
      : op_(op), name_(name), type_(type), where_(fmt::format("op '{}': attribute '{}'", op, name)) {
    if (!arg.empty() && arg != name) where_ += fmt::format(" (argument '{}')", arg);
  }

  pb::OpDesc::Attr Convert(py::handle v) const {
    pb::OpDesc::Attr a;
    a.set_name(name_);
    a.set_type(type_);
    switch (type_) {
      case pb::INT:
        a.set_i(static_cast<int32_t>(Int(v, INT32_MIN, INT32_MAX)));
        break;
      case pb::LONG:
        a.set_l(Int(v, INT64_MIN, INT64_MAX));
        break;
      case pb::FLOAT:
        a.set_f(Float32(v));
        break;
      case pb::FLOAT64:
        a.set_float64(Double(v));
        break;
      case pb::BOOLEAN:
        a.set_b(Bool(v));
        break;
      case pb::STRING:
        a.set_s(Str(v));
        break;
      case pb::BLOCK:
        a.set_block_idx(static_cast<int32_t>(Int(v, 0, INT32_MAX)));
        break;
      case pb::INTS:
        for (auto x : List(v, "int")) a.add_ints(static_cast<int32_t>(Int(x, INT32_MIN, INT32_MAX)));
        break;
      case pb::LONGS:
        for (auto x : List(v, "int")) a.add_longs(Int(x, INT64_MIN, INT64_MAX));
        break;
      case pb::FLOATS:
        for (auto x : List(v, "float")) a.add_floats(Float32(x));
        break;
      case pb::FLOAT64S:
        for (auto x : List(v, "float")) a.add_float64s(Double(x));
        break;
      case pb::BOOLEANS:
        for (auto x : List(v, "bool")) a.add_bools(Bool(x));
        break;
      case pb::STRINGS:
        for (auto x : List(v, "str")) a.add_strings(Str(x));
        break;
      case pb::BLOCKS:
        for (auto x : List(v, "Block or block index")) a.add_blocks_idx(static_cast<int32_t>(Int(x, 0, INT32_MAX)));
        break;
      default:
        throw PaddlecException(MakeError(ErrorCode::kUnimplemented, "{} has type {}, which Python cannot set", where_,
                                         ir::AttrTypeName(type_)));
    }
    return a;
  }

 private:
  [[noreturn]] void WrongType(py::handle v, const char* want) const {
    ThrowAttrTypeError(MakeError(ErrorCode::kValidation, "{} ({}) takes {}, got {} {}", where_, ir::AttrTypeName(type_),
                                 want, TypeName(v), Repr(v)));
  }
  [[noreturn]] void OutOfRange(py::handle v, const char* what) const {
    throw PaddlecException(
        MakeError(ErrorCode::kInvalidArgument, "{} value {} is out of range for {}", where_, Repr(v), what));
  }
  static bool IsInt(py::handle v) { return !PyBool_Check(v.ptr()) && PyIndex_Check(v.ptr()); }

  int64_t Int(py::handle v, int64_t lo, int64_t hi) const {
    if (!IsInt(v)) WrongType(v, "an int");
    py::int_ i = py::reinterpret_steal<py::int_>(PyNumber_Index(v.ptr()));
    if (!i) throw py::error_already_set();
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
    if (overflow != 0 || x < lo || x > hi) OutOfRange(v, hi == INT32_MAX ? "a 32-bit int" : "a 64-bit int");
    return x;
  }
  /// NumPy's scalars count as numbers and bools (np.float32(0.5), np.bool_(True)).
  static bool IsReal(py::handle v) {
    return !PyBool_Check(v.ptr()) && !PyUnicode_Check(v.ptr()) && !IsNumpyBool(v) && PyNumber_Check(v.ptr()) &&
           Py_TYPE(v.ptr())->tp_as_number->nb_float != nullptr;
  }
  static bool IsNumpyBool(py::handle v) {
    std::string_view t = Py_TYPE(v.ptr())->tp_name;
    return t == "numpy.bool_" || t == "numpy.bool";
  }
  double Double(py::handle v) const {
    if (!IsInt(v) && !IsReal(v)) WrongType(v, "a float");
    double d = IsInt(v) ? PyLong_AsDouble(py::reinterpret_steal<py::object>(PyNumber_Index(v.ptr())).ptr())
                        : PyFloat_AsDouble(py::reinterpret_steal<py::object>(PyNumber_Float(v.ptr())).ptr());
    if (PyErr_Occurred()) {
      PyErr_Clear();
      OutOfRange(v, "a float");
    }
    return d;
  }
  float Float32(py::handle v) const {
    double d = Double(v);
    if (std::isfinite(d) && std::fabs(d) > FLT_MAX) OutOfRange(v, "a 32-bit float");
    return static_cast<float>(d);
  }
  bool Bool(py::handle v) const {
    if (!PyBool_Check(v.ptr()) && !IsNumpyBool(v)) WrongType(v, "a bool");
    return PyObject_IsTrue(v.ptr()) == 1;
  }
  std::string Str(py::handle v) const {
    if (!PyUnicode_Check(v.ptr())) WrongType(v, "a str");
    return v.cast<std::string>();
  }
  /// A list, a tuple, or a 1-D NumPy array (as its Python values).
  py::list List(py::handle v, const char* element) const {
    std::string want = std::string("a list of ") + element;
    if (PyList_Check(v.ptr()) || PyTuple_Check(v.ptr())) return py::list(py::reinterpret_borrow<py::object>(v));
    if (py::hasattr(v, "ndim") && py::hasattr(v, "tolist") && py::int_(v.attr("ndim")).cast<int>() == 1)
      return py::list(v.attr("tolist")());
    WrongType(v, want.c_str());
  }

  const std::string& op_;
  const std::string& name_;
  pb::AttrType type_;
  std::string where_;  // "op 'pool2d': attribute 'ksize' (argument 'pool_size')"
};

/// The AttrType a Python value suggests, for attributes the op does not declare (CheckOp then
/// reports them with a "did you mean" hint).
pb::AttrType GuessAttrType(py::handle v) {
  auto elem = [](py::handle x) -> pb::AttrType {
    if (PyBool_Check(x.ptr())) return pb::BOOLEANS;
    if (PyIndex_Check(x.ptr())) return pb::INTS;
    if (PyFloat_Check(x.ptr())) return pb::FLOATS;
    return pb::STRINGS;
  };
  if (PyBool_Check(v.ptr())) return pb::BOOLEAN;
  if (PyIndex_Check(v.ptr())) return pb::INT;
  if (PyFloat_Check(v.ptr())) return pb::FLOAT;
  if ((PyList_Check(v.ptr()) || PyTuple_Check(v.ptr())) && py::len(v) > 0) return elem(v.begin()->ptr());
  if (PyList_Check(v.ptr()) || PyTuple_Check(v.ptr())) return pb::INTS;
  return pb::STRING;
}

template <class R, class F>
py::list ToList(const R& xs, F&& f) {
  py::list l;
  for (const auto& x : xs) l.append(f(x));
  return l;
}

py::object AttrToPython(const pb::OpDesc::Attr& a) {
  auto id = [](auto x) { return py::cast(x); };
  switch (a.type()) {
    case pb::INT:
      return py::int_(a.i());
    case pb::LONG:
      return py::int_(a.l());
    case pb::FLOAT:
      return py::float_(a.f());
    case pb::FLOAT64:
      return py::float_(a.float64());
    case pb::BOOLEAN:
      return py::bool_(a.b());
    case pb::STRING:
      return py::str(a.s());
    case pb::BLOCK:
      return py::int_(a.block_idx());
    case pb::INTS:
      return ToList(a.ints(), id);
    case pb::LONGS:
      return ToList(a.longs(), id);
    case pb::FLOATS:
      return ToList(a.floats(), id);
    case pb::FLOAT64S:
      return ToList(a.float64s(), id);
    case pb::BOOLEANS:
      return ToList(a.bools(), id);
    case pb::STRINGS:
      return ToList(a.strings(), id);
    case pb::BLOCKS:
      return ToList(a.blocks_idx(), id);
    case pb::VAR:
      return py::str(a.var_name());
    case pb::VARS:
      return ToList(a.vars_name(), id);
    default:
      return py::none();
  }
}

/// The declared type of attribute `name` of `info`'s op (or a common attribute); nullptr if unknown.
const pb::OpProto::Attr* AttrSpec(const ops::OpInfo* info, const std::string& name) {
  const pb::OpProto::Attr* spec = info ? info->FindAttr(name) : nullptr;
  return spec ? spec : Registry().FindCommonAttr(name);
}

using SlotMap = std::map<std::string, std::vector<std::string>>;

/// Slots in proto order (then any the proto does not know, which CheckOp reports).
void FillSlots(pb::OpDesc& op, const SlotMap& slots, const google::protobuf::RepeatedPtrField<pb::OpProto::Var>* proto,
               bool input) {
  auto add = [&](const std::string& name, const std::vector<std::string>& args) {
    auto* s = input ? op.add_inputs() : op.add_outputs();
    s->set_parameter(name);
    for (const auto& a : args) s->add_arguments(a);
  };
  std::set<std::string> done;
  if (proto != nullptr)
    for (const auto& p : *proto)
      if (auto it = slots.find(p.name()); it != slots.end()) {
        add(it->first, it->second);
        done.insert(it->first);
      }
  for (const auto& [name, args] : slots)
    if (!done.count(name)) add(name, args);
}

pb::OpDesc BuildOp(const std::string& type, const SlotMap& inputs, const SlotMap& outputs, const py::dict& attrs) {
  const ops::OpInfo* info = Registry().Find(type);
  pb::OpDesc op;
  op.set_type(type);
  FillSlots(op, inputs, info ? &info->proto().inputs() : nullptr, true);
  FillSlots(op, outputs, info ? &info->proto().outputs() : nullptr, false);
  // Attributes in proto order too, so equal calls give byte-identical programs.
  std::vector<std::pair<std::string, py::handle>> items;
  for (auto [k, v] : attrs) {
    if (!PyUnicode_Check(k.ptr())) throw py::type_error("attribute names must be str, got " + TypeName(k));
    items.emplace_back(k.cast<std::string>(), v);
  }
  auto rank = [&](const std::string& name) {
    if (info)
      for (int i = 0; i < info->proto().attrs_size(); ++i)
        if (info->proto().attrs(i).name() == name) return i;
    return INT_MAX;
  };
  std::stable_sort(items.begin(), items.end(),
                   [&](const auto& a, const auto& b) { return rank(a.first) < rank(b.first); });
  for (const auto& [name, value] : items) {
    const pb::OpProto::Attr* spec = AttrSpec(info, name);
    *op.add_attrs() = AttrConverter(type, name, spec ? spec->type() : GuessAttrType(value)).Convert(value);
  }
  return op;
}

// ---- Handles --------------------------------------------------------------------------------

struct BlockHandle {
  StatePtr state;
  int idx;
  ir::Block& block() const { return state->block(idx); }
};

struct OpHandle {
  StatePtr state;
  int block_idx;
  pb::OpDesc* op;
  uint64_t epoch;

  pb::OpDesc& desc() const {
    if (state->epoch() != epoch)
      // The op may be gone: never touch it here.
      throw PaddlecException(MakeError(ErrorCode::kNotFound,
                                       "this op handle belongs to an earlier version of its "
                                       "program (a pass rewrote it or an op was removed)")
                                 .Note("look the op up again through its block"));
    return *op;
  }
  int index() const {
    const pb::OpDesc* d = &desc();
    const auto& ops = state->block(block_idx).desc().ops();
    for (int i = 0; i < ops.size(); ++i)
      if (&ops.Get(i) == d) return i;
    return -1;
  }
};

struct VarHandle {
  StatePtr state;
  int block_idx;
  std::string name;

  pb::VarDesc& desc() const {
    pb::VarDesc* v = state->block(block_idx).FindLocalVar(name);
    if (v == nullptr)
      throw PaddlecException(
          MakeError(ErrorCode::kNotFound, "variable '{}' no longer exists in block {}", name, block_idx));
    return *v;
  }
};

OpHandle Handle(const StatePtr& s, int block, pb::OpDesc* op) { return {s, block, op, s->epoch()}; }

std::map<std::string, std::vector<std::string>> SlotsToMap(
    const google::protobuf::RepeatedPtrField<pb::OpDesc::Var>& slots) {
  std::map<std::string, std::vector<std::string>> m;
  for (const auto& s : slots) m[s.parameter()] = {s.arguments().begin(), s.arguments().end()};
  return m;
}

py::list SlotNames(const google::protobuf::RepeatedPtrField<pb::OpDesc::Var>& slots) {
  py::list l;
  for (const auto& s : slots) l.append(s.parameter());
  return l;
}

std::vector<std::string> SlotArgs(const google::protobuf::RepeatedPtrField<pb::OpDesc::Var>& slots,
                                  const std::string& name) {
  for (const auto& s : slots)
    if (s.parameter() == name) return {s.arguments().begin(), s.arguments().end()};
  return {};
}

/// Inserts `op` at `pos` (-1: the end), checks it and infers its output shapes; on failure the block
/// is left exactly as it was.
OpHandle InsertChecked(const BlockHandle& b, int pos, pb::OpDesc op) {
  ir::Block& block = b.block();
  if (pos < 0) pos = block.num_ops();
  if (pos > block.num_ops())
    throw PaddlecException(MakeError(ErrorCode::kInvalidArgument,
                                     "cannot insert an op at position {} of block {}, "
                                     "which has {} ops",
                                     pos, b.idx, block.num_ops()));
  // What the checks may change: variables they declare here, and output variables' shapes.
  int num_vars = block.num_vars();
  std::vector<std::pair<pb::VarDesc*, pb::VarDesc>> saved;
  for (const auto& s : op.outputs())
    for (const auto& a : s.arguments())
      if (pb::VarDesc* v = block.FindVar(a)) saved.emplace_back(v, *v);
  *block.InsertOp(pos) = std::move(op);
  auto rollback = [&] {
    block.RemoveOp(pos);
    for (auto& [v, copy] : saved) *v = copy;
    if (block.num_vars() > num_vars) {
      block.desc().mutable_vars()->DeleteSubrange(num_vars, block.num_vars() - num_vars);
      block.RebuildIndex();
    }
  };
  std::vector<Error> errors;
  ops::CheckOp(block.op(pos), Registry(), {.fix = true}, errors);
  Status st = ops::ToStatus(std::move(errors));
  if (st.ok()) st = ops::InferShapeAtCompileTime(block.op(pos), Registry());
  if (!st.ok()) {
    rollback();
    ThrowIfError(std::move(st));
  }
  b.state->Touch();
  return Handle(b.state, b.idx, block.desc().mutable_ops(pos));
}

ir::Format FormatArg(const std::string& name) { return ValueOrThrow(ir::ParseFormat(name)); }

DType DTypeArg(const std::string& name) {
  auto d = ParseDType(name);
  if (!d || *d == DType::kUndefined)
    throw PaddlecException(MakeError(ErrorCode::kInvalidArgument, "unknown data type '{}'", name)
                               .Note("expected a NumPy name such as float32, float64, int32, int64, bool"));
  return *d;
}

Dims DimsArg(const std::vector<int64_t>& dims) {
  Dims d = ValueOrThrow(Dims::FromRange(dims.begin(), dims.end()));
  ThrowIfError(CheckDims(d));
  return d;
}

py::object VarAttrToPython(const pb::VarDesc::Attr& a) {
  switch (a.type()) {
    case pb::INT:
      return py::int_(a.i());
    case pb::STRING:
      return py::str(a.s());
    case pb::INTS:
      return py::cast(std::vector<int>(a.ints().begin(), a.ints().end()));
    default:
      return py::none();
  }
}

}  // namespace

void RegisterDesc(py::module_& m) {
  m.def(
      "check_attr",
      [](const std::string& op_type, const std::string& name, py::handle value, const std::string& arg) -> py::object {
        const pb::OpProto::Attr* spec = AttrSpec(Registry().Find(op_type), name);
        // An attribute the op does not know passes through, for CheckOp's "did you mean" when appended.
        if (spec == nullptr) return py::reinterpret_borrow<py::object>(value);
        pb::OpDesc::Attr a = AttrConverter(op_type, name, spec->type(), arg).Convert(value);
        if (std::string problem = ops::AttrValueProblem(a, *spec); !problem.empty()) {
          std::string where = fmt::format("op '{}': attribute '{}'", op_type, name);
          if (!arg.empty() && arg != name) where += fmt::format(" (argument '{}')", arg);
          throw PaddlecException(MakeError(ErrorCode::kValidation, "{} {}", where, problem));
        }
        return AttrToPython(a);
      },
      py::arg("op_type"), py::arg("name"), py::arg("value"), py::arg("arg") = "",
      "`value` checked against attribute `name` of `op_type` (type, range, allowed values: the checks of "
      "`paddlec compile`) and converted to the Python value the core stores; AttributeTypeError or "
      "ValidationError naming the op, the attribute and `arg` (the keyword it was passed as) otherwise.");

  py::class_<ProgramState, StatePtr> program(m, "ProgramDesc",
                                             "A ProgramDesc owned by C++: blocks of ops over variables.");
  py::class_<BlockHandle> block(m, "BlockDesc", "A block of a ProgramDesc.");
  py::class_<OpHandle> op(m, "OpDesc", "An op of a block: its type, slots and attributes.");
  py::class_<VarHandle> var(m, "VarDesc", "A variable declared in a block.");

  program.def(py::init<>(), "An empty program with one global block.")
      .def_static(
          "parse",
          [](const py::bytes& data, const std::string& format) {
            std::string bytes = data;
            auto module = ValueOrThrow(ir::ParseModule(bytes, FormatArg(format), "<bytes>"));
            return std::make_shared<ProgramState>(module->compiled().main_program());
          },
          py::arg("data"), py::arg("format"),
          "Parses a ProgramDesc (or a CompiledProgram's main program) from bytes in a format: text, "
          "binary or json.")
      .def(
          "serialize",
          [](const ProgramState& s, const std::string& format) {
            return py::bytes(ValueOrThrow(ir::Serialize(s.desc(), FormatArg(format))));
          },
          py::arg("format") = "binary", "The ProgramDesc as bytes: binary (PaddlePaddle's wire format), text or json.")
      .def(
          "copy", [](const ProgramState& s) { return std::make_shared<ProgramState>(s.desc()); }, "A deep copy.")
      .def(
          "assign", [](ProgramState& s, const ProgramState& o) { s.Replace(o.desc()); }, py::arg("other"),
          "Replaces this program's content by a copy of `other`'s.")
      .def_property_readonly("num_blocks", [](const ProgramState& s) { return s.program().num_blocks(); })
      .def_property_readonly("version", &ProgramState::version, "Changes with every edit.")
      .def_property_readonly("epoch", &ProgramState::epoch, "Changes when op handles become invalid.")
      .def(
          "block",
          [](const StatePtr& s, int idx) {
            s->block(idx);
            return BlockHandle{s, idx};
          },
          py::arg("idx"))
      .def(
          "append_block",
          [](const StatePtr& s, int parent) {
            s->block(parent);
            ir::Block& b = s->program().AppendBlock(parent);
            s->Touch();
            return BlockHandle{s, b.idx()};
          },
          py::arg("parent_idx"), "Appends a block nested in block `parent_idx`.")
      .def("__eq__", [](const ProgramState& a, const ProgramState& b) {
        return a.desc().SerializeAsString() == b.desc().SerializeAsString();
      });

  block.def_property_readonly("idx", [](const BlockHandle& b) { return b.idx; })
      .def_property_readonly("parent_idx", [](const BlockHandle& b) { return b.block().parent_idx(); })
      .def_property_readonly("program", [](const BlockHandle& b) { return b.state; })
      .def_property_readonly("num_ops", [](const BlockHandle& b) { return b.block().num_ops(); })
      .def(
          "op",
          [](const BlockHandle& b, int i) {
            ir::Block& block = b.block();
            if (i < 0 || i >= block.num_ops()) throw py::index_error("op index out of range");
            return Handle(b.state, b.idx, block.desc().mutable_ops(i));
          },
          py::arg("index"))
      .def("ops",
           [](const BlockHandle& b) {
             std::vector<OpHandle> out;
             for (auto& o : *b.block().desc().mutable_ops()) out.push_back(Handle(b.state, b.idx, &o));
             return out;
           })
      .def(
          "var_names",
          [](const BlockHandle& b) {
            std::vector<std::string> out;
            for (const auto& v : b.block().desc().vars()) out.push_back(v.name());
            return out;
          },
          "Names of the variables declared in this block, in declaration order.")
      .def(
          "has_var", [](const BlockHandle& b, const std::string& n) { return b.block().FindLocalVar(n) != nullptr; },
          py::arg("name"))
      .def(
          "find_var_block",
          [](const BlockHandle& b, const std::string& n) {
            ir::Block* found = b.block().FindVarBlock(n);
            return found ? found->idx() : -1;
          },
          py::arg("name"), "The block declaring `name`, searching outwards; -1 if none.")
      .def(
          "var",
          [](const BlockHandle& b, const std::string& n) {
            if (b.block().FindLocalVar(n) == nullptr)
              throw PaddlecException(MakeError(ErrorCode::kNotFound, "block {} has no variable '{}'", b.idx, n));
            return VarHandle{b.state, b.idx, n};
          },
          py::arg("name"))
      .def(
          "create_var",
          [](const BlockHandle& b, const std::string& n) {
            ir::Block& block = b.block();
            if (n.empty()) throw PaddlecException(MakeError(ErrorCode::kInvalidArgument, "a variable needs a name"));
            if (block.FindLocalVar(n) != nullptr)
              throw PaddlecException(
                  MakeError(ErrorCode::kInvalidArgument, "block {} already declares a variable '{}'", b.idx, n));
            block.AddVar(n);
            b.state->Touch();
            return VarHandle{b.state, b.idx, n};
          },
          py::arg("name"), "Declares a float32 LOD_TENSOR variable with no dims yet.")
      .def(
          "remove_var",
          [](const BlockHandle& b, const std::string& n) {
            ir::Block& block = b.block();
            int i = block.var_index(n);
            if (i < 0)
              throw PaddlecException(MakeError(ErrorCode::kNotFound, "block {} has no variable '{}'", b.idx, n));
            for (const auto& o : block.desc().ops())
              for (const auto* slots : {&o.inputs(), &o.outputs()})
                for (const auto& s : *slots)
                  for (const auto& a : s.arguments())
                    if (a == n)
                      throw PaddlecException(MakeError(ErrorCode::kInvalidArgument,
                                                       "variable '{}' is used by a {} op and cannot be removed", n,
                                                       o.type()));
            block.desc().mutable_vars()->DeleteSubrange(i, 1);
            block.RebuildIndex();
            b.state->Touch();
          },
          py::arg("name"), "Removes a variable no op of the block uses.")
      .def(
          "append_op",
          [](const BlockHandle& b, const std::string& type, const SlotMap& inputs, const SlotMap& outputs,
             const py::dict& attrs) { return InsertChecked(b, -1, BuildOp(type, inputs, outputs, attrs)); },
          py::arg("type"), py::arg("inputs"), py::arg("outputs"), py::arg("attrs"),
          "Appends an op after checking it against its OpProto (defaults filled) and inferring its output "
          "shapes; raises, leaving the block unchanged, when either fails.")
      .def(
          "insert_op",
          [](const BlockHandle& b, int pos, const std::string& type, const SlotMap& inputs, const SlotMap& outputs,
             const py::dict& attrs) { return InsertChecked(b, pos, BuildOp(type, inputs, outputs, attrs)); },
          py::arg("pos"), py::arg("type"), py::arg("inputs"), py::arg("outputs"), py::arg("attrs"),
          "Like append_op, at position `pos`.")
      .def(
          "remove_op",
          [](const BlockHandle& b, int pos) {
            ir::Block& block = b.block();
            if (pos < 0 || pos >= block.num_ops()) throw py::index_error("op index out of range");
            block.RemoveOp(pos);
            b.state->Invalidate();
          },
          py::arg("pos"), "Removes an op; handles to this program's ops become invalid.");

  op.def_property_readonly("type", [](const OpHandle& o) { return o.desc().type(); })
      .def_property_readonly("block_idx", [](const OpHandle& o) { return o.block_idx; })
      .def_property_readonly("index", &OpHandle::index, "The op's position in its block.")
      .def_property_readonly("valid", [](const OpHandle& o) { return o.state->epoch() == o.epoch; })
      .def(
          "input_names", [](const OpHandle& o) { return SlotNames(o.desc().inputs()); }, "Input slots, in order.")
      .def("output_names", [](const OpHandle& o) { return SlotNames(o.desc().outputs()); })
      .def("inputs", [](const OpHandle& o) { return SlotsToMap(o.desc().inputs()); })
      .def("outputs", [](const OpHandle& o) { return SlotsToMap(o.desc().outputs()); })
      .def(
          "input", [](const OpHandle& o, const std::string& s) { return SlotArgs(o.desc().inputs(), s); },
          py::arg("slot"), "The variables bound to an input slot (empty when absent).")
      .def(
          "output", [](const OpHandle& o, const std::string& s) { return SlotArgs(o.desc().outputs(), s); },
          py::arg("slot"))
      .def("attr_names",
           [](const OpHandle& o) {
             std::vector<std::string> out;
             for (const auto& a : o.desc().attrs()) out.push_back(a.name());
             return out;
           })
      .def(
          "has_attr",
          [](const OpHandle& o, const std::string& n) {
            for (const auto& a : o.desc().attrs())
              if (a.name() == n) return true;
            return false;
          },
          py::arg("name"))
      .def(
          "attr",
          [](const OpHandle& o, const std::string& n) {
            for (const auto& a : o.desc().attrs())
              if (a.name() == n) return AttrToPython(a);
            throw PaddlecException(
                MakeError(ErrorCode::kNotFound, "op '{}' has no attribute '{}'", o.desc().type(), n));
          },
          py::arg("name"))
      .def(
          "attr_type",
          [](const OpHandle& o, const std::string& n) {
            for (const auto& a : o.desc().attrs())
              if (a.name() == n) return std::string(ir::AttrTypeName(a.type()));
            throw PaddlecException(
                MakeError(ErrorCode::kNotFound, "op '{}' has no attribute '{}'", o.desc().type(), n));
          },
          py::arg("name"))
      .def(
          "set_attr",
          [](const OpHandle& o, const std::string& n, py::handle value) {
            pb::OpDesc& d = o.desc();
            const pb::OpProto::Attr* spec = AttrSpec(Registry().Find(d.type()), n);
            if (spec == nullptr)
              throw PaddlecException(
                  MakeError(ErrorCode::kValidation, "unknown attribute '{}' for op '{}'", n, d.type()));
            pb::OpDesc::Attr a = AttrConverter(d.type(), n, spec->type()).Convert(value);
            // Check the new value with the op's own checker on a scratch copy before committing it.
            pb::OpDesc trial = d;
            bool set = false;
            for (auto& x : *trial.mutable_attrs()) {
              if (x.name() != n) continue;
              x = a;
              set = true;
            }
            if (!set) *trial.add_attrs() = a;
            ir::Block& block = o.state->block(o.block_idx);
            int pos = o.index();
            pb::OpDesc saved = d;
            d = trial;
            std::vector<Error> errors;
            ops::CheckOp(block.op(pos), Registry(), {.fix = false}, errors);
            Status st = ops::ToStatus(std::move(errors));
            if (!st.ok()) {
              d = saved;
              ThrowIfError(std::move(st));
            }
            o.state->Touch();
          },
          py::arg("name"), py::arg("value"),
          "Sets an attribute, checked against the op's proto; output shapes are not re-inferred.")
      .def("serialize", [](const OpHandle& o) { return py::bytes(o.desc().SerializeAsString()); })
      .def("to_string", [](const OpHandle& o) { return ValueOrThrow(ir::Serialize(o.desc(), ir::Format::kText)); });

  var.def_property_readonly("name", [](const VarHandle& v) { return v.name; })
      .def_property_readonly("block_idx", [](const VarHandle& v) { return v.block_idx; })
      .def_property(
          "type", [](const VarHandle& v) { return pb::VarType::Type_Name(v.desc().type().type()); },
          [](const VarHandle& v, const std::string& t) {
            pb::VarType::Type type;
            if (!pb::VarType::Type_Parse(t, &type))
              throw PaddlecException(MakeError(ErrorCode::kInvalidArgument, "unknown variable type '{}'", t));
            pb::VarDesc& d = v.desc();
            if (type == pb::VarType::LOD_TENSOR || type == pb::VarType::SELECTED_ROWS ||
                type == pb::VarType::LOD_TENSOR_ARRAY) {
              auto dims = ir::VarDims(d);
              DType dt = ir::VarDType(d);
              d.mutable_type()->Clear();
              d.mutable_type()->set_type(type);
              ir::SetVarShape(&d, dims.ok() ? *dims : Dims(), dt);
            } else {
              d.mutable_type()->Clear();
              d.mutable_type()->set_type(type);
            }
            v.state->Touch();
          },
          "The VarType: LOD_TENSOR for tensors; FEED_MINIBATCH / FETCH_LIST for feed and fetch holders.")
      .def_property_readonly("is_tensor", [](const VarHandle& v) { return ir::IsTensorVar(v.desc()); })
      .def_property(
          "shape",
          [](const VarHandle& v) -> py::object {
            const pb::VarDesc& d = v.desc();
            if (!ir::IsTensorVar(d)) return py::none();
            const auto* t = ir::TensorDescOf(d);
            return py::cast(std::vector<int64_t>(t->dims().begin(), t->dims().end()));
          },
          [](const VarHandle& v, const std::vector<int64_t>& dims) {
            pb::VarDesc& d = v.desc();
            ir::SetVarShape(&d, DimsArg(dims), ir::VarDType(d));
            v.state->Touch();
          },
          "Dims with -1 for unknown sizes; None for variables that are not tensors.")
      .def_property(
          "dtype",
          [](const VarHandle& v) -> py::object {
            const pb::VarDesc& d = v.desc();
            if (!ir::IsTensorVar(d)) return py::none();
            return py::str(std::string(DTypeName(ir::VarDType(d))));
          },
          [](const VarHandle& v, const std::string& name) {
            pb::VarDesc& d = v.desc();
            auto dims = ir::VarDims(d);
            ir::SetVarShape(&d, dims.ok() ? *dims : Dims(), DTypeArg(name));
            v.state->Touch();
          },
          "NumPy's name of the element type (float32, int64, ...); None for non-tensors.")
      .def_property(
          "lod_level", [](const VarHandle& v) { return v.desc().type().lod_tensor().lod_level(); },
          [](const VarHandle& v, int level) {
            pb::VarDesc& d = v.desc();
            if (d.type().type() != pb::VarType::LOD_TENSOR)
              throw PaddlecException(MakeError(ErrorCode::kInvalidArgument, "'{}' is not a LOD_TENSOR", v.name));
            d.mutable_type()->mutable_lod_tensor()->set_lod_level(level);
            v.state->Touch();
          })
#define PC_BOOL_FIELD(field, doc)                                                     \
  def_property(                                                                       \
      #field, [](const VarHandle& v) { return v.desc().field(); },                    \
      [](const VarHandle& v, bool x) {                                                \
        /* false is the default: clearing keeps files free of "field: false" lines */ \
        if (x)                                                                        \
          v.desc().set_##field(true);                                                 \
        else                                                                          \
          v.desc().clear_##field();                                                   \
        v.state->Touch();                                                             \
      },                                                                              \
      doc)
      .PC_BOOL_FIELD(persistable, "Lives in the scope across runs (parameters, optimizer state).")
      .PC_BOOL_FIELD(stop_gradient, "The backward pass computes no gradient for it.")
      .PC_BOOL_FIELD(need_check_feed, "A data input whose fed shape and dtype are checked.")
      .PC_BOOL_FIELD(is_parameter, "A parameter (PaddlePaddle's marker).")
#undef PC_BOOL_FIELD
      .def("attr_names",
           [](const VarHandle& v) {
             std::vector<std::string> out;
             for (const auto& a : v.desc().attrs()) out.push_back(a.name());
             return out;
           })
      .def(
          "attr",
          [](const VarHandle& v, const std::string& n) -> py::object {
            for (const auto& a : v.desc().attrs())
              if (a.name() == n) return VarAttrToPython(a);
            return py::none();
          },
          py::arg("name"), "A VarDesc attribute (initializer, learning_rate, regularizer, ...); None if unset.")
      .def(
          "set_attr",
          [](const VarHandle& v, const std::string& n, py::handle value) {
            pb::VarDesc& d = v.desc();
            pb::VarDesc::Attr* a = nullptr;
            for (auto& x : *d.mutable_attrs())
              if (x.name() == n) a = &x;
            if (value.is_none()) {
              for (int i = 0; i < d.attrs_size(); ++i)
                if (d.attrs(i).name() == n) d.mutable_attrs()->DeleteSubrange(i, 1);
              v.state->Touch();
              return;
            }
            pb::VarDesc::Attr x;
            x.set_name(n);
            if (PyUnicode_Check(value.ptr())) {
              x.set_type(pb::STRING);
              x.set_s(value.cast<std::string>());
            } else if (!PyBool_Check(value.ptr()) && PyIndex_Check(value.ptr())) {
              x.set_type(pb::INT);
              x.set_i(value.cast<int>());
            } else if (PyList_Check(value.ptr()) || PyTuple_Check(value.ptr())) {
              x.set_type(pb::INTS);
              for (auto e : value) x.add_ints(e.cast<int>());
            } else {
              ThrowAttrTypeError(MakeError(ErrorCode::kValidation,
                                           "variable attribute '{}' takes a str, an int "
                                           "or a list of int, got {}",
                                           n, TypeName(value)));
            }
            if (a)
              *a = x;
            else
              *d.add_attrs() = x;
            v.state->Touch();
          },
          py::arg("name"), py::arg("value"), "Sets (or with None removes) a VarDesc attribute.")
      .def("to_string", [](const VarHandle& v) { return ValueOrThrow(ir::Serialize(v.desc(), ir::Format::kText)); });

  m.def(
      "var_handle",
      [](const StatePtr& s, int block_idx, const std::string& name) {
        if (s->block(block_idx).FindLocalVar(name) == nullptr)
          throw PaddlecException(MakeError(ErrorCode::kNotFound, "block {} has no variable '{}'", block_idx, name));
        return VarHandle{s, block_idx, name};
      },
      py::arg("program"), py::arg("block_idx"), py::arg("name"));
}

}  // namespace paddlec::python
