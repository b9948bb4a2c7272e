// Scopes, the executor and parameter files for Python, with NumPy arrays in and out.
//
// Executor.run keeps one plan per (program, block, scope), rebuilt only when the program changed,
// so a Python training loop pays for kernel selection once. Feeds wrap the caller's array without a
// copy when it is C-contiguous, aligned and of a supported dtype, and the plan never writes the
// variable; fetches are always fresh arrays. Arrays are read through the buffer protocol and made
// with numpy.empty, so the module does not depend on NumPy's C ABI (which changed in NumPy 2).
//
// On a GPU the scope's parameters live in device memory between runs. Python executors of one GPU
// share one device context (stream, allocator), so any number of them may run over a scope in turn;
// a scope keeps the contexts holding its tensors alive and reads or saves them through those. A plan
// finds what it reads on its own device: arrays set from Python (on the host) are uploaded, tensors
// of another device are moved, when it first runs.
#include <omp.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <list>
#include <map>
#include <set>
#include <utility>

#include "bindings.h"
#include "paddlec/exec/executor.h"
#include "paddlec/io/params.h"

namespace paddlec::python {
namespace {

using runtime::Tensor;

/// A scope shared by Python objects and the plans built over it: a root, or a kid made by new_scope()
/// whose lookups continue in its parent (which it keeps alive).
struct ScopeHolder {
  ScopeHolder() = default;
  explicit ScopeHolder(std::shared_ptr<ScopeHolder> p) : parent(std::move(p)), scope(&parent->scope) {}

  // The GPU executors whose memory holds some of the tensors; declared first, so they outlive them.
  std::vector<std::shared_ptr<exec::Executor>> devices;
  std::shared_ptr<ScopeHolder> parent;
  runtime::Scope scope;
  std::shared_ptr<runtime::Allocator> host_alloc = runtime::CpuCachingAllocator::Create();
  std::vector<std::weak_ptr<ScopeHolder>> kids;
  bool dropped = false;  // by the parent's drop_kids(): its tensors are freed and it refuses use

  runtime::DeviceContext& DeviceOf(const Place& place, const std::string& name) const {
    for (const ScopeHolder* h = this; h != nullptr; h = h->parent.get())
      for (const auto& d : h->devices)
        if (d->place() == place) return d->device();
    throw PaddlecException(MakeError(ErrorCode::kInternal, "'{}' lives on {}, which no executor of this scope runs on",
                                     name, place.ToString()));
  }
  /// A plan over this scope may write into its ancestors (parameters found there) on `e`'s device.
  void AddDevice(const std::shared_ptr<exec::Executor>& e) {
    for (ScopeHolder* h = this; h != nullptr; h = h->parent.get())
      if (std::find(h->devices.begin(), h->devices.end(), e) == h->devices.end()) h->devices.push_back(e);
  }
  void CheckUsable() const {
    if (dropped)
      throw PaddlecException(
          MakeError(ErrorCode::kInvalidArgument, "this scope was dropped by its parent's drop_kids() and holds nothing")
              .Note("make a new one with new_scope()"));
  }
  /// drop_kids(): frees every kid's tensors (and their kids') and marks them unusable. Variables stay
  /// (plans cached by executors still point at them) but hold nothing.
  void DropKids() {
    for (auto& w : kids)
      if (auto kid = w.lock()) {
        kid->DropKids();
        for (const auto& n : kid->scope.LocalNames()) {
          runtime::Variable* v = kid->scope.FindLocal(n);
          v->tensor() = Tensor();
          v->list().clear();
        }
        kid->dropped = true;
      }
    kids.clear();
  }
};
using ScopePtr = std::shared_ptr<ScopeHolder>;

/// A read-only view of any object exporting the buffer protocol (NumPy arrays among them). Going
/// through PEP 3118 rather than NumPy's C structs keeps the module independent of NumPy's ABI.
class BufferView {
 public:
  BufferView(py::handle obj, const std::string& name) : name_(name) {
    if (PyObject_GetBuffer(obj.ptr(), &view_, PyBUF_RECORDS_RO) != 0) {
      PyErr_Clear();
      throw PaddlecException(MakeError(ErrorCode::kInvalidArgument, "'{}': a {} is not an array", name,
                                       py::str(py::type::handle_of(obj).attr("__name__")).cast<std::string>()));
    }
    held_ = true;
  }
  ~BufferView() {
    if (held_) PyBuffer_Release(&view_);
  }
  BufferView(const BufferView&) = delete;
  BufferView& operator=(const BufferView&) = delete;

  const void* data() const { return view_.buf; }
  size_t nbytes() const { return static_cast<size_t>(view_.len); }
  bool c_contiguous() const { return PyBuffer_IsContiguous(&view_, 'C') != 0; }
  bool aligned() const { return view_.itemsize > 0 && reinterpret_cast<uintptr_t>(view_.buf) % view_.itemsize == 0; }

  DType dtype() const {
    std::string_view f = view_.format ? view_.format : "B";
    if (!f.empty() && (f[0] == '@' || f[0] == '=' || f[0] == '<')) f.remove_prefix(1);
    DType t = DType::kUndefined;
    if (f.size() == 1) {
      char c = f[0];
      size_t n = static_cast<size_t>(view_.itemsize);
      if (c == 'f' && n == 4)
        t = DType::kFloat32;
      else if (c == 'd' && n == 8)
        t = DType::kFloat64;
      else if (c == '?' && n == 1)
        t = DType::kBool;
      else if (c == 'B' && n == 1)
        t = DType::kUInt8;
      else if (std::string_view("bhilq").find(c) != std::string_view::npos)
        t = n == 1 ? DType::kInt8 : n == 2 ? DType::kInt16 : n == 4 ? DType::kInt32 : n == 8 ? DType::kInt64 : t;
    }
    if (t == DType::kUndefined)
      throw PaddlecException(MakeError(ErrorCode::kInvalidArgument,
                                       "'{}': arrays with element format '{}' ({} bytes) "
                                       "are not supported",
                                       name_, view_.format ? view_.format : "B", view_.itemsize)
                                 .Note("use float32, float64, int64, int32, int16, int8, uint8 or bool"));
    return t;
  }

  Dims dims() const {
    if (view_.ndim > kMaxRank)
      throw PaddlecException(MakeError(ErrorCode::kInvalidArgument,
                                       "'{}': arrays of rank {} exceed the maximum rank {}", name_, view_.ndim,
                                       kMaxRank));
    Dims d;
    for (int i = 0; i < view_.ndim; ++i) d.push_back(view_.shape[i]);
    ThrowIfError(CheckDims(d));
    return d;
  }

 private:
  std::string name_;
  Py_buffer view_{};
  bool held_ = false;
};

/// Makes `t` view the array's memory without a copy; the buffer stays exported (and the array alive)
/// until the tensor lets go of it.
void WrapArray(py::handle obj, const std::string& name, Tensor& t) {
  auto view = std::make_shared<BufferView>(obj, name);
  DType dtype = view->dtype();
  Dims dims = view->dims();
  auto release = [view]() mutable {
    // Buffers may be released by a thread without the GIL (a plan replacing a tensor while running).
    if (!Py_IsInitialized()) {
      new std::shared_ptr<BufferView>(std::move(view));  // the interpreter is gone: leak, never touch it
      return;
    }
    py::gil_scoped_acquire gil;
    view.reset();
  };
  void* data = const_cast<void*>(view->data());
  size_t bytes = view->nbytes();
  t.Set(dtype, dims);
  t.set_buffer(std::make_shared<runtime::Buffer>(data, bytes, Place::CPU(), std::move(release)));
}

/// Copies the array into `t`, on memory from `alloc`.
void CopyArray(py::handle obj, const std::string& name, Tensor& t, runtime::Allocator& alloc) {
  BufferView view(obj, name);
  if (!view.c_contiguous())
    throw PaddlecException(MakeError(ErrorCode::kInvalidArgument, "'{}': the array is not C-contiguous", name)
                               .Note("pass numpy.ascontiguousarray(array)"));
  t.Set(view.dtype(), view.dims());
  ThrowIfError(t.Allocate(alloc));
  if (t.nbytes() > 0) std::memcpy(t.raw_data(), view.data(), t.nbytes());
}

bool ZeroCopyable(py::handle obj, const std::string& name) {
  BufferView view(obj, name);
  view.dtype();  // unsupported dtypes fail here, with the message the copy would give
  return view.c_contiguous() && view.aligned();
}

/// A new NumPy array holding a copy of a host tensor.
py::object TensorToArray(const Tensor& t, const std::string& name) {
  if (!t.place().is_cpu())
    throw PaddlecException(MakeError(ErrorCode::kUnimplemented, "'{}' lives on {}: fetch it through an Executor", name,
                                     t.place().ToString()));
  static py::handle numpy_empty = py::object(py::module_::import("numpy").attr("empty")).release();
  py::tuple shape(t.dims().rank());
  for (int i = 0; i < t.dims().rank(); ++i) shape[i] = py::int_(t.dims()[i]);
  py::object out = numpy_empty(shape, py::str(std::string(DTypeName(t.dtype()))));
  Py_buffer view;
  if (PyObject_GetBuffer(out.ptr(), &view, PyBUF_CONTIG) != 0) throw py::error_already_set();
  if (t.nbytes() > 0) std::memcpy(view.buf, t.raw_data(), t.nbytes());
  PyBuffer_Release(&view);
  return out;
}

/// A host copy of a scope's tensor, fetched from the device that holds it when it is not on the host.
py::object ScopeValueToArray(const ScopeHolder& s, const Tensor& t, const std::string& name) {
  if (t.place().is_cpu()) return TensorToArray(t, name);
  Tensor host;
  ThrowIfError(s.DeviceOf(t.place(), name).CopyToHost(t, host, *s.host_alloc));
  return TensorToArray(host, name);
}

const Tensor& ValueOf(const runtime::Scope& scope, const std::string& name) {
  runtime::Variable* v = scope.Find(name);
  if (v == nullptr)
    throw PaddlecException(MakeError(ErrorCode::kNotFound, "the scope has no variable named '{}'", name));
  if (!v->tensor().initialized())
    throw PaddlecException(MakeError(ErrorCode::kNotFound, "variable '{}' holds no value", name)
                               .Note("run the startup program, feed it, or run an op that writes it"));
  return v->tensor();
}

/// The LoD fed with variable `name` (a list of levels, each a list of offsets), checked against the
/// `rows` the fed array has.
runtime::LoD LoDFromPython(py::handle obj, const std::string& name, const Dims& dims) {
  runtime::LoD lod;
  try {
    for (py::handle level : py::reinterpret_borrow<py::iterable>(obj)) {
      lod.emplace_back();
      for (py::handle x : py::reinterpret_borrow<py::iterable>(level)) {
        int64_t v = x.cast<int64_t>();
        if (v < 0)
          throw PaddlecException(
              MakeError(ErrorCode::kInvalidArgument, "'{}': LoD offsets must be >= 0, got {}", name, v));
        lod.back().push_back(static_cast<uint64_t>(v));
      }
    }
  } catch (const py::cast_error&) {
    throw PaddlecException(MakeError(ErrorCode::kInvalidArgument,
                                     "'{}': the LoD must be a list of lists of int offsets, such as [[0, 2, 5]]", name));
  }
  if (dims.rank() == 0 && !lod.empty())
    throw PaddlecException(MakeError(ErrorCode::kInvalidArgument, "'{}': a scalar cannot carry a LoD", name));
  std::string problem = runtime::LoDProblem(lod, dims.rank() ? dims[0] : 0);
  if (!problem.empty())
    throw PaddlecException(MakeError(ErrorCode::kInvalidArgument, "'{}': invalid LoD {}: {}", name,
                                     py::str(obj).cast<std::string>(), problem)
                               .Note("offsets start at 0, never decrease, and the last level ends at the row count"));
  return lod;
}

py::list LoDToPython(const runtime::LoD& lod) {
  py::list out;
  for (const auto& level : lod) out.append(py::cast(std::vector<uint64_t>(level.begin(), level.end())));
  return out;
}

/// A CPU context for parameter files that keeps the thread count callers chose (creating a context
/// sets OpenMP's).
std::unique_ptr<runtime::DeviceContext> HostContext() {
  return ValueOrThrow(exec::CreateDeviceContext(Place::CPU(), omp_get_max_threads()));
}

std::vector<std::string> Names(const py::iterable& xs) {
  std::vector<std::string> out;
  for (py::handle x : xs) out.push_back(x.cast<std::string>());
  return out;
}

class PyExecutor {
 public:
  PyExecutor(const std::string& place, int num_threads) {
    Place p = ValueOrThrow(ParsePlace(place));
    if (p.is_cpu()) {
      exec_ = ValueOrThrow(exec::Executor::Create(p, {.num_threads = num_threads}));
      return;
    }
    static std::map<std::string, std::weak_ptr<exec::Executor>> shared;  // under the GIL
    std::weak_ptr<exec::Executor>& slot = shared[p.ToString()];
    exec_ = slot.lock();
    if (!exec_) {
      exec_ = ValueOrThrow(exec::Executor::Create(p, {.num_threads = num_threads}));
      slot = exec_;
    }
  }

  std::string place() const { return exec_->place().ToString(); }

  py::list Run(const StatePtr& program, int block_idx, const ScopePtr& scope, const py::dict& feeds,
               const std::vector<std::string>& fetches, uint64_t seed, bool zero_copy, const py::dict& lods,
               bool return_lod, int op_begin, int op_end, bool check_nan_inf) {
    scope->CheckUsable();
    Entry& e = Prepare(program, block_idx, scope, seed, op_begin, op_end, check_nan_inf);
    runtime::Scope& s = *e.local->child;
    auto& device = exec_->device();
    BringInputsHere(e, *scope);
    for (auto [k, v] : feeds) {
      if (!PyUnicode_Check(k.ptr())) throw py::type_error("feed names must be str");
      std::string name = k.cast<std::string>();
      runtime::Variable* var = s.Find(name);
      Tensor& t = var ? var->tensor() : s.Var(name).tensor();
      if (!device.place().is_cpu()) {
        Tensor host;
        CopyArray(v, name, host, *scope->host_alloc);
        ThrowIfError(device.CopyFromHost(host, t));
      } else if (zero_copy && !e.written.count(name) && ZeroCopyable(v, name)) {
        WrapArray(v, name, t);
      } else {
        CopyArray(v, name, t, device.allocator());
      }
      // A feed without a LoD is a plain tensor, whatever the variable held before.
      if (lods.contains(k)) t.mutable_lod() = LoDFromPython(lods[k], name, t.dims());
      else if (!t.lod().empty()) t.mutable_lod().clear();
    }
    // An op updating a variable in place would write into memory a caller fed without a copy, through
    // this program or another one sharing the scope: give such variables memory of their own first.
    for (const auto& name : e.in_place) {
      runtime::Variable* v = s.Find(name);
      if (v == nullptr || !v->tensor().buffer() || v->tensor().buffer()->owned()) continue;
      Tensor own;
      ThrowIfError(device.CopyFromHost(v->tensor(), own));
      v->tensor() = own;
    }
    Status st;
    {
      py::gil_scoped_release release;
      st = e.plan->Run();
    }
    ThrowIfError(std::move(st));
    py::list out;
    for (const auto& name : fetches) {
      const Tensor& t = ValueOf(s, name);
      py::object array;
      if (t.place().is_cpu()) {
        array = TensorToArray(t, name);
      } else {
        Tensor host;
        ThrowIfError(device.CopyToHost(t, host, *scope->host_alloc));
        array = TensorToArray(host, name);
      }
      if (return_lod) out.append(py::make_tuple(array, LoDToPython(t.lod())));
      else out.append(array);
    }
    return out;
  }

  size_t cached_plans() const { return cache_.size(); }
  void ClearCache() {
    cache_.clear();
    locals_.clear();
    lru_.clear();
  }

 private:
  // (program, block, scope, first op, end op): plans of op ranges of one block are cached apart.
  using Key = std::tuple<const ProgramState*, int, const ScopeHolder*, int, int>;
  using LocalKey = std::tuple<const ProgramState*, int, const ScopeHolder*>;

  /// The child of the caller's scope holding one plan's temporaries. Programs sharing a scope share
  /// its persistable variables (parameters) but never each other's intermediates, which a plan sizes
  /// once and would otherwise find resized by another plan.
  struct LocalScope {
    ScopePtr root;
    runtime::Scope* child = nullptr;
    LocalScope() = default;
    LocalScope(ScopePtr r) : root(std::move(r)), child(&root->scope.NewChild()) {}
    LocalScope(LocalScope&& o) noexcept : root(std::move(o.root)), child(std::exchange(o.child, nullptr)) {}
    LocalScope& operator=(LocalScope&& o) noexcept {
      std::swap(root, o.root);
      std::swap(child, o.child);
      return *this;
    }
    ~LocalScope() {
      if (child != nullptr) root->scope.DeleteChild(child);
    }
  };

  struct Entry {
    StatePtr state;
    std::shared_ptr<ir::Program> program;  // the one the plan points into
    // Declared before the plan: destroyed after it. Shared by the plans of every op range of the
    // block over the scope, so a later range reads what an earlier one wrote (Network.run(from, to)).
    std::shared_ptr<LocalScope> local;
    uint64_t version = 0, seed = 0;
    bool check_nan_inf = false;
    bool ready = false;
    std::unique_ptr<exec::Plan> plan;
    std::set<std::string> written;      // every variable an op of the block writes
    std::set<std::string> read;         // every variable an op of the block reads
    std::vector<std::string> in_place;  // variables an op reads and writes
  };
  static constexpr size_t kMaxPlans = 16;

  /// Moves the values the plan reads that live elsewhere (on the host, or another device) to this
  /// executor's device, which then holds part of the scope.
  void BringInputsHere(const Entry& e, ScopeHolder& scope);

  Entry& Prepare(const StatePtr& program, int block_idx, const ScopePtr& scope, uint64_t seed, int op_begin,
                 int op_end, bool check_nan_inf) {
    Key key{program.get(), block_idx, scope.get(), op_begin, op_end};
    auto it = cache_.find(key);
    if (it == cache_.end()) {
      it = cache_.emplace(key, Entry{}).first;
      std::weak_ptr<LocalScope>& shared = locals_[LocalKey{program.get(), block_idx, scope.get()}];
      it->second.local = shared.lock();
      if (!it->second.local) {
        it->second.local = std::make_shared<LocalScope>(scope);
        shared = it->second.local;
      }
    }
    lru_.remove(key);
    lru_.push_front(key);
    while (lru_.size() > kMaxPlans) {
      cache_.erase(lru_.back());
      lru_.pop_back();
    }
    std::erase_if(locals_, [](const auto& kv) { return kv.second.expired(); });
    Entry& e = it->second;
    if (e.ready && e.version == program->version() && e.seed == seed && e.check_nan_inf == check_nan_inf) return e;

    e.ready = false;
    e.plan.reset();  // before anything else points into the local scope
    ir::Block& block = program->block(block_idx);
    // Persistable variables live in the caller's scope (or an ancestor of it, for a kid made by
    // new_scope()), where every program run on it finds them.
    for (const ir::Block* b = &block; b != nullptr; b = b->parent())
      for (const auto& v : b->desc().vars())
        if (v.persistable() && scope->scope.Find(v.name()) == nullptr) scope->scope.Var(v.name());
    e.state = program;
    e.program = program->shared_program();
    e.plan = ValueOrThrow(exec_->Prepare(
        block, *e.local->child, {.op_begin = op_begin, .op_end = op_end, .seed = seed, .check_nan_inf = check_nan_inf}));
    e.version = program->version();
    e.seed = seed;
    e.check_nan_inf = check_nan_inf;
    e.written.clear();
    e.read.clear();
    e.in_place.clear();
    for (const auto& op : block.desc().ops()) {
      std::set<std::string> ins;
      for (const auto& s : op.inputs()) ins.insert(s.arguments().begin(), s.arguments().end());
      e.read.insert(ins.begin(), ins.end());
      for (const auto& s : op.outputs())
        for (const auto& a : s.arguments()) {
          e.written.insert(a);
          if (ins.count(a) && std::find(e.in_place.begin(), e.in_place.end(), a) == e.in_place.end())
            e.in_place.push_back(a);
        }
    }
    e.ready = true;
    return e;
  }

  std::shared_ptr<exec::Executor> exec_;
  std::map<Key, Entry> cache_;
  std::map<LocalKey, std::weak_ptr<LocalScope>> locals_;
  std::list<Key> lru_;
};

void PyExecutor::BringInputsHere(const Entry& e, ScopeHolder& scope) {
  const Place here = exec_->place();
  for (const auto& name : e.read) {
    runtime::Variable* v = e.local->child->Find(name);
    if (v == nullptr || !v->tensor().initialized() || v->tensor().place() == here) continue;
    Tensor host;
    if (v->tensor().place().is_cpu()) {
      host = v->tensor();
    } else {
      ThrowIfError(scope.DeviceOf(v->tensor().place(), name).CopyToHost(v->tensor(), host, *scope.host_alloc));
    }
    if (here.is_cpu()) {
      v->tensor() = std::move(host);
    } else {
      Tensor device;
      ThrowIfError(exec_->device().CopyFromHost(host, device));
      v->tensor() = std::move(device);
    }
  }
  // Plans' outputs and persistable state are allocated here from now on, whether or not inputs moved.
  if (!here.is_cpu()) scope.AddDevice(exec_);
}

}  // namespace

void RegisterRuntime(py::module_& m) {
  py::class_<ScopeHolder, ScopePtr>(m, "Scope",
                                    "Named variables holding tensors, shared by the programs run on it; lookups "
                                    "continue in the parent scope of a scope made by new_scope().")
      .def(py::init<>())
      .def(
          "new_scope",
          [](const ScopePtr& s) {
            s->CheckUsable();
            auto kid = std::make_shared<ScopeHolder>(s);
            s->kids.push_back(kid);
            return kid;
          },
          "A child scope: it finds the variables of this one (and its ancestors) and keeps its own apart.")
      .def("drop_kids", &ScopeHolder::DropKids, "Frees the scopes made by new_scope() (and theirs).")
      .def_property_readonly("parent", [](const ScopeHolder& s) { return s.parent; })
      .def_property_readonly("dropped", [](const ScopeHolder& s) { return s.dropped; })
      .def(
          "var_names",
          [](const ScopeHolder& s) {
            s.CheckUsable();
            return s.scope.LocalNames();
          },
          "Names of the variables of this scope (not of its parents), sorted.")
      .def(
          "has_value",
          [](const ScopeHolder& s, const std::string& n) {
            runtime::Variable* v = s.dropped ? nullptr : s.scope.Find(n);
            return v != nullptr && v->tensor().initialized();
          },
          py::arg("name"))
      .def(
          "has_local_value",
          [](const ScopeHolder& s, const std::string& n) {
            runtime::Variable* v = s.dropped ? nullptr : s.scope.FindLocal(n);
            return v != nullptr && v->tensor().initialized();
          },
          py::arg("name"))
      .def(
          "get",
          [](const ScopeHolder& s, const std::string& n) {
            s.CheckUsable();
            return ScopeValueToArray(s, ValueOf(s.scope, n), n);
          },
          py::arg("name"), "A copy of the variable's tensor (found here or in a parent) as a NumPy array.")
      .def(
          "set",
          [](ScopeHolder& s, const std::string& n, py::handle a, bool local) {
            s.CheckUsable();
            runtime::Variable* v = local ? s.scope.FindLocal(n) : s.scope.Find(n);
            Tensor& t = v ? v->tensor() : s.scope.Var(n).tensor();
            CopyArray(a, n, t, *s.host_alloc);
          },
          py::arg("name"), py::arg("array"), py::arg("local") = false,
          "Copies an array into the variable (found here or in a parent unless `local`; created here if missing).")
      .def(
          "shape",
          [](const ScopeHolder& s, const std::string& n) {
            s.CheckUsable();
            const Dims& d = ValueOf(s.scope, n).dims();
            return std::vector<int64_t>(d.begin(), d.end());
          },
          py::arg("name"))
      .def(
          "dtype",
          [](const ScopeHolder& s, const std::string& n) {
            s.CheckUsable();
            return std::string(DTypeName(ValueOf(s.scope, n).dtype()));
          },
          py::arg("name"))
      .def(
          "erase", [](ScopeHolder& s, const std::string& n) { return s.scope.Erase(n); }, py::arg("name"));

  py::class_<PyExecutor>(m, "Executor",
                         "Runs blocks of programs over scopes, caching one plan per (program, block, scope).")
      .def(py::init<const std::string&, int>(), py::arg("place") = "cpu", py::arg("num_threads") = 0)
      .def_property_readonly("place", &PyExecutor::place)
      .def("run", &PyExecutor::Run, py::arg("program"), py::arg("block"), py::arg("scope"), py::arg("feeds"),
           py::arg("fetches"), py::arg("seed") = 0, py::arg("zero_copy") = true, py::arg("lods") = py::dict(),
           py::arg("return_lod") = false, py::arg("op_begin") = 0, py::arg("op_end") = -1,
           py::arg("check_nan_inf") = false,
           "Feeds arrays (dict name -> C-contiguous ndarray of a supported dtype; `lods` maps names to LoD "
           "offsets), runs the block's ops [op_begin, op_end) once (op_end -1: to the end) and returns copies "
           "of the fetched variables ((array, lod) pairs with return_lod). check_nan_inf: fail at the first "
           "op whose output holds a NaN or Inf.")
      .def_property_readonly("cached_plans", &PyExecutor::cached_plans)
      .def("clear_cache", &PyExecutor::ClearCache);

  m.def(
      "save_params",
      [](const std::string& path, const py::iterable& names, const ScopeHolder& scope) {
        // A device context copies both its own tensors and host ones.
        std::vector<std::string> list = Names(names);
        for (const auto& n : list) {
          runtime::Variable* v = scope.scope.Find(n);
          if (v != nullptr && v->tensor().initialized() && !v->tensor().place().is_cpu()) {
            ThrowIfError(io::SaveParams(path, list, scope.scope, scope.DeviceOf(v->tensor().place(), n)));
            return;
          }
        }
        auto device = HostContext();
        ThrowIfError(io::SaveParams(path, list, scope.scope, *device));
      },
      py::arg("path"), py::arg("names"), py::arg("scope"),
      "Writes the named tensors in PaddlePaddle's combined params format (save_combine), in the given order.");
  m.def(
      "load_params",
      [](const std::string& path, const py::iterable& names, ScopeHolder& scope, const StatePtr& program) {
        auto device = HostContext();
        const ir::Block* block = program ? &program->block(0) : nullptr;
        ThrowIfError(io::LoadParams(path, Names(names), scope.scope, *device, block));
      },
      py::arg("path"), py::arg("names"), py::arg("scope"), py::arg("program") = py::none(),
      "Reads a combined params file whose records belong to `names` (in order), checking each against "
      "its declaration in the program's global block when a program is given.");
}

}  // namespace paddlec::python
